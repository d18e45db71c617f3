#if CLI
import Keepsake

#if DEBUG
extension MigrateCommand {
    /// For tests only, never for apps: ``main(chains:commandName:version:appID:backends:keySources:arguments:bootstrapsLogging:)``
    /// with `copyCheckpoint`, which `copy` calls after each step of its transfer
    /// (``StoreTransfer/Step``), on the thread that runs it, so that a test executable can stop
    /// the process between two steps (and kill it there, or change a store and let it go on).
    ///
    /// Compiled only into debug builds and reachable only through `@_spi(Testing) import
    /// KeepsakeCLI`: the shipped `migrate` (a release build) has no such point, and nothing
    /// here reads the environment.
    ///
    /// - Important: Never returns; see ``main(chains:commandName:version:appID:backends:keySources:arguments:bootstrapsLogging:)``.
    @_spi(Testing) public static func main(
        chains: [AnyModelChain], commandName: String = "migrate", backends: [any StoreBackend] = [],
        bootstrapsLogging: Bool = true, copyCheckpoint: @escaping @Sendable (StoreTransfer.Step) -> Void
    ) -> Never {
        main(
            chains: chains, commandName: commandName, version: nil, appID: "org.keepsake.migrate",
            backends: backends, arguments: nil, bootstrapsLogging: bootstrapsLogging,
            copyCheckpoint: copyCheckpoint)
    }
}
#endif
#endif
