import Foundation

/// The four XDG base directories an app keeps its files under — what an uninstall wipes.
///
/// A private test keyring provides a throwaway set (``TestKeyring/home``); a process inside it
/// sees them as `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_CACHE_HOME` and `XDG_STATE_HOME`, so an
/// app's `DefaultsStore(suite:app:)` lands there, never in the user's own `~/.config`.
public struct XDGDirectories: Sendable, Equatable {
    /// `XDG_CONFIG_HOME`: defaults suites (`<config>/<app>/<suite>.json`).
    public let config: URL
    /// `XDG_DATA_HOME`: an app's data, encrypted stores among it.
    public let data: URL
    /// `XDG_CACHE_HOME`.
    public let cache: URL
    /// `XDG_STATE_HOME`.
    public let state: URL

    /// The four directories, as given.
    public init(config: URL, data: URL, cache: URL, state: URL) {
        self.config = config
        self.data = data
        self.cache = cache
        self.state = state
    }

    /// The four directories under `base`: `base/config`, `base/data`, `base/cache`, `base/state`.
    public init(under base: URL) {
        self.init(
            config: base.appendingPathComponent("config"), data: base.appendingPathComponent("data"),
            cache: base.appendingPathComponent("cache"), state: base.appendingPathComponent("state"))
    }

    /// All four, in the order config, data, cache, state.
    public var all: [URL] { [config, data, cache, state] }

    /// The app's own directory in each: `<config>/<appID>`, `<data>/<appID>`, … — what an
    /// uninstall that deletes the app's data removes.
    public func appDirectories(_ appID: String) -> [URL] {
        all.map { $0.appendingPathComponent(appID) }
    }

    /// The environment variables naming them.
    public var environment: [String: String] {
        [
            "XDG_CONFIG_HOME": config.path, "XDG_DATA_HOME": data.path,
            "XDG_CACHE_HOME": cache.path, "XDG_STATE_HOME": state.path
        ]
    }
}
