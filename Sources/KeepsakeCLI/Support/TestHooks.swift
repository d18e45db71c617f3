import Keepsake

#if DEBUG
import Synchronization
#endif

/// The points where a test executable can stop a command, compiled only into debug builds.
///
/// The shipped `migrate` (a release build) has none, and nothing here reads the environment:
/// a test executable (Tests/CustomMigrate) sets them through
/// ``MigrateCommand/copyCheckpoint`` (`@_spi(Testing)`) before calling
/// ``MigrateCommand/main(chains:commandName:version:appID:arguments:bootstrapsLogging:)``.
enum TestHooks {
    #if DEBUG
    fileprivate static let copyStorage = Mutex<(@Sendable (StoreTransfer.Step) -> Void)?>(nil)
    #endif

    /// What `copy` calls after each step of its transfer: the test's checkpoint in a debug
    /// build where one was set, else `nil`.
    static var copyCheckpoint: (@Sendable (StoreTransfer.Step) -> Void)? {
        #if DEBUG
        copyStorage.withLock { $0 }
        #else
        nil
        #endif
    }
}

#if DEBUG
extension MigrateCommand {
    /// For tests only, never for apps: called by `copy` after each step of its transfer
    /// (``StoreTransfer/Step``), on the thread that runs it, so that a test executable can stop
    /// the process between two steps (and kill it there, or change a store and let it go on).
    ///
    /// Compiled only into debug builds and reachable only through `@_spi(Testing) import
    /// KeepsakeCLI`; set it before ``main(chains:commandName:version:appID:arguments:bootstrapsLogging:)``.
    @_spi(Testing) public static var copyCheckpoint: (@Sendable (StoreTransfer.Step) -> Void)? {
        get { TestHooks.copyStorage.withLock { $0 } }
        set { TestHooks.copyStorage.withLock { $0 = newValue } }
    }
}
#endif
