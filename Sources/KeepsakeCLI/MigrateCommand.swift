#if CLI
import ArgumentParser
import Foundation
import Keepsake

/// The `migrate` command line, as a library: an app ships its own `migrate` for its own model
/// chains in a few lines.
///
/// The command is the stock `migrate` — every subcommand (`status`, `plan`, `run`, `show`,
/// `get`, `put`, `delete`, `models`, `init`, `rekey`, `copy`, `trial`, `doctor`), every table and
/// `--json` output, the backup and master-key options, and the documented exit codes — with
/// the app's chains in place of the sample ones: they are what `--model KEY=NAME` accepts,
/// what `models` lists, and what `status`, `plan`, `run` and `show` match records against.
///
/// ```swift
/// import KeepsakeCLI
/// import MyModels
///
/// @main
/// struct SettingsMigrate {
///     static func main() {
///         MigrateCommand.main(chains: [Settings.chain.erased], commandName: "settings-migrate")
///     }
/// }
/// ```
///
/// Run `settings-migrate --help` for the commands and the exit codes.
public enum MigrateCommand {
    /// Parses the command line, runs the command it names on `chains`, and exits the process
    /// with the command's exit code (0 on success; see `--help` for the others).
    ///
    /// Call it once, from the executable's entry point: it parses and runs like
    /// `ParsableCommand.main`, with the chains, name, version, app id and backends bound (as a
    /// task-local value) around the parse and the run. With `--json`,
    /// every outcome — failures included — is one JSON value on standard output (the shapes are
    /// in the repository's docs/CLI.md).
    ///
    /// It bootstraps swift-log's `LoggingSystem` so that Keepsake's log lines go to standard
    /// error at the level `--verbose` and `--quiet` choose; an executable that bootstraps it
    /// itself (swift-log allows one bootstrap per process) passes `bootstrapsLogging: false`.
    ///
    /// ```swift
    /// MigrateCommand.main(chains: [Settings.chain.erased, Profile.chain.erased],
    ///                     commandName: "settings-migrate", version: "2.4.0")
    /// ```
    ///
    /// - Parameters:
    ///   - chains: The model chains records are matched to, in the order `models` lists them.
    ///     Each needs its own name. An empty list still leaves every store command (`get`, `put`,
    ///     `delete`, `init`, `rekey`, `copy`, `trial`, `doctor`) usable; every record is then unmanaged.
    ///   - commandName: The name shown in usage lines, `--help` and hints (`"migrate"`).
    ///   - version: What `--version` prints; `nil` leaves out the `--version` flag.
    ///   - appID: The app id this device's identity is derived with (the default of `--app-id`):
    ///     pass the app's own, so that a step the tool runs records the same identity the app
    ///     would. Only steps that ask for a device identity use it.
    ///   - backends: Store kinds of the app's own, beside the standard `defaults:`, `file:`,
    ///     `keyring:` (`KeepsakeStores`): every command then takes their URIs too.
    ///   - keySources: Master key sources of the app's own (``KeySourceKind``), beside the
    ///     standard ones: every key option then takes `SCHEME:VALUE` for them too.
    ///   - arguments: The arguments to parse, without the command name; `nil` for the process's
    ///     own (`CommandLine.arguments.dropFirst()`).
    ///   - bootstrapsLogging: Whether to bootstrap `LoggingSystem` (see above).
    /// - Important: Never returns. When two chains share a name, a backend's scheme is taken, or
    ///   `commandName` is empty, it
    ///   prints why to standard error and exits with status 1 before parsing anything, so no
    ///   store is opened.
    public static func main(
        chains: [AnyModelChain], commandName: String = "migrate", version: String? = nil,
        appID: String = "org.keepsake.migrate", backends: [any StoreBackend] = [],
        keySources: [KeySourceKind] = [], arguments: [String]? = nil, bootstrapsLogging: Bool = true
    ) -> Never {
        main(
            chains: chains, commandName: commandName, version: version, appID: appID, backends: backends,
            keySources: keySources, arguments: arguments, bootstrapsLogging: bootstrapsLogging, copyCheckpoint: nil)
    }

    /// ``main(chains:commandName:version:appID:backends:keySources:arguments:bootstrapsLogging:)``, with the
    /// test executable's `copy` checkpoint (see ``TestHooks``).
    static func main(
        chains: [AnyModelChain], commandName: String, version: String?, appID: String,
        backends: [any StoreBackend], keySources: [KeySourceKind] = [], arguments: [String]?,
        bootstrapsLogging: Bool, copyCheckpoint: (@Sendable (StoreTransfer.Step) -> Void)?
    ) -> Never {
        let configuration: CLIConfiguration
        do throws(KeepsakeError) {
            configuration = try CLIConfiguration(
                chains: chains, commandName: commandName, version: version,
                appID: appID, backends: backends, keySources: keySources, copyCheckpoint: copyCheckpoint)
        } catch {
            printError("error: \(error.message)")
            exit(ExitCode.failure.rawValue)
        }
        let given = arguments ?? Array(CommandLine.arguments.dropFirst())
        if arguments == nil, let position = firstNonUTF8Argument() {
            // Swift's `CommandLine.arguments` replaces bytes that are not UTF-8 with U+FFFD: a
            // path given that way would silently name another file.
            exit(
                CLIConfiguration.$current.withValue(Failure.context(configuration, arguments: given)) {
                    Failure.usage(
                        "argument \(position) is not valid UTF-8; \(commandName) takes paths and keys as UTF-8 text only",
                        command: Migrate.self)
                })
        }
        exit(execute(given, configuration: configuration, bootstrapsLogging: bootstrapsLogging))
    }

    /// The 1-based position of the first process argument whose bytes are not UTF-8, if any.
    static func firstNonUTF8Argument() -> Int? {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            if String(validatingCString: argument) == nil { return index }
        }
        return nil
    }

    /// Parses `arguments` and runs the command they name with `configuration` bound, and returns
    /// its exit status; help, `--version` and completion requests are answered by
    /// ArgumentParser, which exits.
    static func execute(
        _ arguments: [String], configuration: CLIConfiguration, bootstrapsLogging: Bool = true
    ) -> Int32 {
        CLIConfiguration.$current.withValue(configuration) {
            let command: any ParsableCommand
            do {
                command = try Migrate.parseAsRoot(arguments)
            } catch {
                if Migrate.exitCode(for: error) == .success { Migrate.exit(withError: error) }
                return CLIConfiguration.$current.withValue(Failure.context(configuration, arguments: arguments)) {
                    Failure.parseError(error, arguments: arguments)
                }
            }
            var running = Failure.context(configuration, arguments: arguments)
            // Help asked for as `help COMMAND` is a command of ArgumentParser's, without these.
            let output = (command as? any OutputCommand)?.output
            running.json = output?.json ?? false
            running.quiet = output?.quiet ?? false
            return CLIConfiguration.$current.withValue(running) {
                if bootstrapsLogging {
                    CLILogHandler.bootstrap(
                        level: CLILogHandler.level(
                            verbose: output?.verbose ?? false, quiet: running.quiet,
                            environment: ProcessInfo.processInfo.environment))
                }
                return run(command)
            }
        }
    }

    /// Runs a parsed command and returns its exit status.
    private static func run(_ command: any ParsableCommand) -> Int32 {
        var command = command
        do {
            try command.run()
            return 0
        } catch let error as KeepsakeError {
            return Failure.report(error)
        } catch let code as ExitCode {
            return code.rawValue
        } catch let error as ValidationError {
            return Failure.usage(error.message, command: type(of: command))
        } catch {
            // Help asked for as `help COMMAND` is answered by a command that throws.
            if Migrate.exitCode(for: error) == .success { Migrate.exit(withError: error) }
            return Failure.unexpected(error)
        }
    }
}
#endif
