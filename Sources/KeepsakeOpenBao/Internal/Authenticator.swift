#if OpenBao
import Foundation
import Keepsake
import Logging
import Synchronization

/// The store's token: obtained on first use (read from its file or variable, or an AppRole
/// login), renewed when two thirds of its time to live have passed, and obtained again when it
/// cannot be renewed any longer or the server refuses it. Never logged, never in a message.
final class Authenticator: Sendable {
    struct Token {
        var value: String
        /// When to renew (or, for a token that cannot be renewed, obtain a new one); `nil` for a
        /// token that does not expire.
        var refreshAt: ContinuousClock.Instant?
        var renewable: Bool
    }

    let configuration: OpenBaoConfiguration
    let store: String
    /// The token, behind a lock that is held while one is obtained or renewed, so that one
    /// login serves every thread that needs it.
    private let current = Mutex<Token?>(nil)
    private let logger = Logger(label: "keepsake.openbao")

    init(configuration: OpenBaoConfiguration, store: String) {
        self.configuration = configuration
        self.store = store
    }

    /// Whether a refused token can be replaced by another: an AppRole logs in again, a token file
    /// may have been rewritten by an agent; a variable cannot change.
    var canRenewCredentials: Bool {
        if case .tokenEnvironment = configuration.authentication { return false }
        return true
    }

    /// Drops the token, so that the next call obtains one again.
    func forget(reason: String) {
        logger.info("obtaining a new token", metadata: ["store": "\(store)", "reason": "\(reason)"])
        current.withLock { $0 = nil }
    }

    /// The token to send now.
    func token(client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> String {
        try current.withLock { (token: inout Token?) throws(KeepsakeError) -> String in
            let next = try self.next(after: token, client: client, deadline: deadline)
            token = next
            return next.value
        }
    }

    /// The token to hold after `held`: `held` itself until it is due for a refresh; then renewed,
    /// or else a new one — or, should obtaining one fail, `held` again, tried a second later.
    /// With none held, a new one.
    private func next(after held: Token?, client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError)
        -> Token
    {
        guard var held else { return try obtain(client: client, deadline: deadline) }
        guard let refreshAt = held.refreshAt, ContinuousClock.now >= refreshAt else { return held }
        if held.renewable {
            do {
                if let renewed = try renew(held, client: client, deadline: deadline) { return renewed }
            } catch {
                logger.info("the token could not be renewed", metadata: ["store": "\(store)", "error": "\(error)"])
            }
        }
        // Not renewable, or renewal refused or ended (its maximum time to live): obtain a new
        // one. The old one is still good until it expires, should this fail.
        do {
            return try obtain(client: client, deadline: deadline)
        } catch {
            logger.warning(
                "could not obtain a new token; using the current one until it expires",
                metadata: ["store": "\(store)", "error": "\(error)"])
            held.refreshAt = ContinuousClock.now + .seconds(1)
            return held
        }
    }

    /// A token from the configured source, with its time to live asked of the server.
    private func obtain(client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> Token {
        switch configuration.authentication {
        case let .tokenFile(path):
            return try lookUp(
                try readSecret(path, what: "token file (token_file=)"), client: client, deadline: deadline)
        case let .tokenEnvironment(name):
            guard
                let value = ProcessInfo.processInfo.environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines),
                !value.isEmpty
            else {
                throw KeepsakeError(.permissionDenied, store: store, "the environment variable \(name) holds no token")
            }
            return try lookUp(value, client: client, deadline: deadline)
        case let .appRole(mount, roleIDFile, secretIDFile):
            let body = try Data.json(
                [
                    "role_id": try readSecret(roleIDFile, what: "AppRole role id file (role_id_file=)"),
                    "secret_id": try readSecret(secretIDFile, what: "AppRole secret id file (secret_id_file=)")
                ], store: store, key: nil)
            let reply = try client.send(
                .POST, "auth/\(mount)/login", body: body, doing: "log in with AppRole", deadline: deadline,
                authenticated: false)
            guard reply.status == 200 else {
                if reply.status == 400 || reply.status == 403 {
                    throw KeepsakeError(
                        .permissionDenied, store: store,
                        "the AppRole login at auth/\(mount) was refused (\(reply.status): \(reply.errors)); check the role id and secret id files"
                    )
                }
                throw client.failure(reply, key: nil, doing: "log in with AppRole")
            }
            let object = try client.object(of: reply, key: nil, doing: "log in with AppRole")
            guard let auth = object["auth"] as? [String: Any], let value = auth["client_token"] as? String else {
                throw KeepsakeError(.io, store: store, "the AppRole login's answer holds no token")
            }
            logger.debug("logged in with AppRole", metadata: ["store": "\(store)"])
            return Token(
                value: value, refreshAt: Self.refreshTime(seconds: auth["lease_duration"]),
                renewable: auth["renewable"] as? Bool ?? false)
        }
    }

    /// Asks the server how long `value` lives (`auth/token/lookup-self`). A token whose policies
    /// do not allow the question is taken as it is, with no refresh time.
    private func lookUp(_ value: String, client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError)
        -> Token
    {
        let reply = try client.send(
            .GET, "auth/token/lookup-self", doing: "look up the token", deadline: deadline, authenticated: false,
            token: value)
        guard reply.status == 200,
            let data = try client.object(of: reply, key: nil, doing: "look up the token")["data"]
                as? [String: Any]
        else {
            if reply.status == 403 {
                logger.debug(
                    "the token may not look itself up; it is used without renewal", metadata: ["store": "\(store)"])
            }
            return Token(value: value, refreshAt: nil, renewable: false)
        }
        return Token(
            value: value, refreshAt: Self.refreshTime(seconds: data["ttl"]),
            renewable: data["renewable"] as? Bool ?? false)
    }

    /// Renews `held` (`auth/token/renew-self`); `nil` when the server refuses.
    private func renew(_ held: Token, client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> Token?
    {
        let reply = try client.send(
            .POST, "auth/token/renew-self", body: Data("{}".utf8), doing: "renew the token", deadline: deadline,
            authenticated: false, token: held.value)
        guard reply.status == 200, let auth = reply.object?["auth"] as? [String: Any] else {
            logger.info(
                "the token could not be renewed", metadata: ["store": "\(store)", "status": "\(reply.status)"])
            return nil
        }
        let lease = (auth["lease_duration"] as? NSNumber)?.intValue ?? 0
        // A renewal capped by the token's maximum time to live gives less each time: when it
        // gives under two seconds, obtain a new token instead.
        guard lease >= 2 else { return nil }
        return Token(value: held.value, refreshAt: Self.refreshTime(seconds: lease), renewable: true)
    }

    /// Two thirds into a time to live of `seconds` (a JSON number), or `nil` for none (0: the
    /// token does not expire).
    private static func refreshTime(seconds: Any?) -> ContinuousClock.Instant? {
        guard let seconds = (seconds as? NSNumber)?.doubleValue, seconds > 0, seconds.isFinite else { return nil }
        return ContinuousClock.now + .milliseconds(Int(min(seconds, 31_536_000) * 1000 * 2 / 3))
    }

    /// A secret from a file, without surrounding white space.
    private func readSecret(_ path: String, what: String) throws(KeepsakeError) -> String {
        let contents: String
        do {
            contents = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw KeepsakeError(
                .permissionDenied, store: store, "the \(what) \(path) cannot be read", underlying: error)
        }
        let value = contents.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else {
            throw KeepsakeError(.permissionDenied, store: store, "the \(what) \(path) is empty")
        }
        return value
    }
}
#endif
