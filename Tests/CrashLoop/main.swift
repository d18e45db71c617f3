import Foundation

// keepsake-crash-loop: kills `migrate run` (and `migrate rekey`) at random moments and checks that
// no record is ever lost or torn. Run by scripts/crash-loop, which builds it and runs it from the
// repository root; `--help` prints what it does (Options.swift).

exit(CrashLoop.main(Array(CommandLine.arguments.dropFirst())))
