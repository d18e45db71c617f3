import Foundation

/// Uninstalls and reinstalls an app inside a private test keyring, as a user would: the app's
/// own files go, the keyring stays.
///
/// ``reinstall(advancingClockBy:)`` removes the app's directory in each of the keyring's XDG
/// base directories (``TestKeyring/home``) — `<XDG_CONFIG_HOME>/<appID>` with its defaults
/// suites, `<XDG_DATA_HOME>/<appID>` with encrypted stores, the cache and state ones — and any
/// other path given, restarts the keyring daemon on the same keyring files (so nothing the
/// daemon cached survives, only what it wrote), and moves the clock if asked. The app then
/// starts as on a first launch, except for what the keyring kept: exactly what a trial guard
/// relies on.
///
/// ```swift
/// let keyring = try TestKeyring.shared()
/// let clock = TestClock(Date(timeIntervalSince1970: 1_767_225_600))
/// let device = ReinstallSimulator(appID: "com.example.notes", keyring: keyring, clock: clock)
/// // … first launch: the app writes its suite, the guard starts the trial …
/// try device.reinstall(advancingClockBy: 3 * 86_400)
/// // … the new install sees no suite, and the same trial …
/// ```
///
/// Nothing outside the private keyring's temporary directory is ever removed: apps under test
/// must keep their files under the XDG directories the keyring sets (`DefaultsStore(suite:app:)`
/// does), or name them in `alsoRemoving`.
public struct ReinstallSimulator: Sendable {
    /// The app's identifier: the name of its folder in each XDG directory.
    public let appID: String
    /// The keyring that outlives the reinstall.
    public let keyring: TestKeyring
    /// The clock ``reinstall(advancingClockBy:)`` moves, if any.
    public let clock: TestClock?
    /// Further files or folders of the app that an uninstall deletes (inside ``TestKeyring/root``).
    public let alsoRemoving: [URL]

    /// - Parameters:
    ///   - appID: A single path component: not empty, no `/`, not `.` or `..`.
    ///   - keyring: The private keyring (usually ``TestKeyring/shared()``).
    ///   - clock: Moved by ``reinstall(advancingClockBy:)``.
    ///   - alsoRemoving: Other paths of the app, each inside the keyring's directory.
    public init(appID: String, keyring: TestKeyring, clock: TestClock? = nil, alsoRemoving: [URL] = []) {
        self.appID = appID
        self.keyring = keyring
        self.clock = clock
        self.alsoRemoving = alsoRemoving
    }

    /// What an uninstall removes: the app's folder in each XDG directory, then ``alsoRemoving``.
    public var appPaths: [URL] { keyring.home.appDirectories(appID) + alsoRemoving }

    /// What one uninstall did.
    public struct Report: Sendable, Equatable {
        /// The paths that existed and were removed.
        public let removed: [URL]
    }

    /// Deletes the app's files (``appPaths``), as `apt remove --purge` or `flatpak uninstall
    /// --delete-data` would. The keyring is not touched.
    ///
    /// - Throws: `.unsafePath` when the app id is not one path component or a path is outside
    ///   ``TestKeyring/root`` (then nothing is removed); `.operationFailed` when a removal fails.
    /// - Important: When a removal fails, the paths before it in ``appPaths`` are gone and the
    ///   rest are untouched.
    @discardableResult
    public func uninstall() throws(TestKeyringError) -> Report {
        guard !appID.isEmpty, appID != ".", appID != "..", !appID.contains("/"), !appID.utf8.contains(0) else {
            throw TestKeyringError(
                .unsafePath, "the app id \"\(appID)\" is not a single folder name; nothing was removed")
        }
        let root = keyring.root.standardizedFileURL.path + "/"
        for path in appPaths where !path.standardizedFileURL.path.hasPrefix(root) {
            throw TestKeyringError(
                .unsafePath,
                """
                \(path.path) is outside the private keyring's directory \(keyring.root.path); nothing was removed
                """)
        }
        var removed: [URL] = []
        for path in appPaths {
            var status = stat()
            guard lstat(path.path, &status) == 0 else { continue }  // never existed: nothing to remove
            do {
                try FileManager.default.removeItem(at: path)
            } catch {
                throw TestKeyringError(.operationFailed, "could not remove \(path.path): \(error)")
            }
            removed.append(path)
        }
        return Report(removed: removed)
    }

    /// Uninstalls (``uninstall()``), restarts the keyring daemon on the same keyring files
    /// (``TestKeyring/restartDaemon()``), and moves ``clock`` by `seconds` — the app can then be
    /// launched again as a fresh install.
    ///
    /// - Throws: Like ``uninstall()`` and ``TestKeyring/restartDaemon()``.
    /// - Important: When it throws, the clock has not moved.
    @discardableResult
    public func reinstall(advancingClockBy seconds: TimeInterval = 0) throws(TestKeyringError) -> Report {
        let report = try uninstall()
        try keyring.restartDaemon()
        if seconds != 0 { clock?.advance(by: seconds) }
        return report
    }
}
