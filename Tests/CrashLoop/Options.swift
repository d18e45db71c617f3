/// A store the crash loop can put under `kill -9`.
enum StoreKind: String, CaseIterable, Sendable {
    case defaults, file, keyring, rekey, datakey
}

/// The command line: `[--runs K] [--records N] [--seed S] [--binary PATH] [STORE…]`.
struct Options: Sendable {
    /// Kills per store.
    var runs = 20
    /// Records seeded (at most 6 in the keyring, 8 for rekey).
    var records = 32
    /// What the delays are drawn from; printed in the summary.
    var seed = Int64.random(in: 0...32767)
    /// The `migrate` binary; nil: a built one, else a debug build.
    var binary: String?
    /// defaults, file, rekey and datakey (and keyring inside a private keyring) when none is named.
    var stores: [StoreKind] = []

    /// What the command line asks for.
    enum Parsed: Sendable {
        case run(Options)
        case help
        case usageError(String)
    }

    /// Parses the arguments (without the program name), as scripts/crash-loop always has.
    static func parse(_ arguments: [String], environment: [String: String]) -> Parsed {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--runs", "--records", "--seed", "--binary":
                guard let value = rest.popFirst() else {
                    return .usageError("\(argument) needs a value (see --help)")
                }
                switch argument {
                case "--binary":
                    options.binary = value
                case "--seed":
                    guard let seed = Int64(value) else { return .usageError("--seed takes an integer, not '\(value)'") }
                    options.seed = seed
                default:
                    guard let count = Int(value), count >= (argument == "--runs" ? 0 : 1) else {
                        return .usageError("\(argument) takes a count, not '\(value)'")
                    }
                    if argument == "--runs" { options.runs = count } else { options.records = count }
                }
            case "-h", "--help":
                return .help
            default:
                guard let store = StoreKind(rawValue: argument) else {
                    return .usageError("unknown argument '\(argument)' (see --help)")
                }
                options.stores.append(store)
            }
        }
        if options.stores.isEmpty {
            options.stores = [.defaults, .file, .rekey, .datakey]
            if environment["KEEPSAKE_TEST_KEYRING"] == "1" { options.stores.append(.keyring) }
        }
        return .run(options)
    }

    /// What `--help` prints.
    static let usage = """
        Kills `migrate run` at random moments and checks that no record is ever lost or torn.

          scripts/crash-loop [--runs K] [--records N] [--seed S] [--binary PATH] [STORE…]

        (scripts/crash-loop builds and runs the keepsake-crash-loop executable, Tests/CrashLoop, from
        the repository root.)

        STORE is defaults, file, keyring, rekey or datakey (default: all but keyring, and keyring too
        when run inside scripts/with-private-keyring, i.e. KEEPSAKE_TEST_KEYRING=1). For each store, in a
        scratch directory (or a keyring service of its own) that is removed at the end:

          1. N old Person records (default 32; at most 6 in the keyring, where every run puts them
             again through D-Bus) are seeded with `migrate put`, cycling through every stored form of
             versions 0–3 in Tests/KeepsakeTests/Fixtures/Person (envelopes, inline and bare objects,
             and each of those wrapped in a JSON string); keys are mapped to Person with --model.
             The scratch directory is under TMPDIR (default /tmp): on a disk, fsyncs take real time.
          2. A reference `migrate run` on a fresh seed gives each record's migrated bytes and the
             time a whole run takes; a second run, with nothing to write, the start-up time. (The
             migrator commits a defaults suite's records in one atomic write, the file store's as
             one group of renames, the keyring's one by one: only the last two can be killed between
             writes.)
          3. K times: reseed, start `migrate run`, SIGKILL it after a random delay — on odd runs from
             the start (0.8 times a run with nothing to write to 1.1 times the reference run), on even
             runs 0–5 ms after its first write (the store directory's mtime moves; not in the
             keyring) — then check every record: it must hold exactly its old
             bytes or exactly its migrated bytes (anything else, or no record, counts as lost). Then
             a `migrate run` to completion must leave every record migrated (exact bytes for the
             defaults suite; `migrate status` says current for the others) and no temporary file
             (`.tmp-…` beside the records or the suite) behind: what a kill leaves, the next open
             cleans. A defaults suite cleans its leftovers on its next write, and a run with nothing
             left to migrate writes nothing: for it, leftovers that survive the completed run are
             counted and must be gone after one write (a put and a delete of a probe key).

        rekey is the file store's `migrate rekey` killed instead of `migrate run`: 8 records are put
        under one key file, then K times the store is put back under it and `migrate rekey
        --new-key-file` is killed at a random moment of its run. The store must then open with
        exactly one of the two key files, every record must read its exact bytes, and once both keys
        were tried no temporary file may be left beside the records, the header or either key file.

        datakey is the file store's data key rotation, `migrate rekey --data-key --batch-size 1`,
        killed: N records are put under one key file, then K times the store is put back as seeded
        and the rotation killed at a random moment of its run (on even runs, within its own work,
        counted from its first write). Every record must read its exact
        bytes; then the rotation run again must finish with one data key in the header, every
        record file sealed under it, every record exact, and no temporary file left.

        Records are read with `migrate get KEY` (the defaults suite is read directly: every value's
        exact bytes are sliced out of the suite's JSON; a file store's record file identical to the
        seeded one is its old bytes without decrypting). The binary is --binary, else
        .build/release/migrate or .build/debug/migrate if built, else a debug build is made.
        --seed makes the delays repeatable (a SplitMix64 generator draws them). Exits non-zero if
        any record is lost or torn or a temporary file survives a completed run (1), for a usage
        error (2), or with the status of a `migrate` command it needs that failed (a seed, a run
        to completion); the last line printed is a summary, unless such a command failed.
        """
}
