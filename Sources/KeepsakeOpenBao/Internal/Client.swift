#if OpenBao
internal import AsyncHTTPClient
import Foundation
import Keepsake
import Logging
internal import NIOCore
internal import NIOHTTP1
internal import NIOSSL
import Synchronization

/// One answer of the server: its status and body, and whether an earlier attempt of the same
/// request may have reached the server (its connection failed after the request was sent), so
/// that a compare-and-swap write that now meets a newer version can ask whether that version
/// is its own.
struct Reply {
    var status: Int
    var body: Data
    var retried: Bool

    /// The body as a JSON object (`nil` when it is not one).
    var object: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }

    /// The server's `errors`, joined: what it said went wrong.
    var errors: String {
        guard let list = object?["errors"] as? [String], !list.isEmpty else { return "no reason given" }
        return list.joined(separator: "; ")
    }
}

/// The HTTP side of an ``OpenBaoStore``: one async-http-client client (kept-alive connections,
/// TLS with the configured CA), the token, the read-after-write index, retries while the
/// server cannot answer, and the mapping of failures to `KeepsakeError`.
///
/// Calls are synchronous: the calling thread waits on the request's future while the client's
/// event loop does the work, so a call from a Swift task blocks only its own thread.
final class Client: Sendable {
    let configuration: OpenBaoConfiguration
    let store: String
    let http: HTTPClient
    let authenticator: Authenticator
    /// The newest `X-Vault-Index` the server sent: sent back with every request, so that a
    /// standby answers only once it has applied this process's writes.
    private let index = Mutex<String?>(nil)
    let logger = Logger(label: "keepsake.openbao")

    init(configuration: OpenBaoConfiguration, store: String) throws(KeepsakeError) {
        self.configuration = configuration
        self.store = store
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = configuration.caCertificateFile {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw KeepsakeError(
                    .invalidArgument, store: store, "the CA certificate file \(file) (cacert=) cannot be read")
            }
            tls.additionalTrustRoots = [.file(file)]
        }
        var settings = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .milliseconds(Int64(configuration.connectTimeout.milliseconds))))
        settings.httpVersion = .http1Only
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: settings)
        authenticator = Authenticator(configuration: configuration, store: store)
    }

    deinit {
        // Closes the kept-alive connections without waiting (a deinit must not block on them).
        http.shutdown { _ in }
    }

    /// Sends one request and returns the server's answer, whatever its status, except:
    /// - a connection that cannot be made or is lost, and a server that is sealed, standing by
    ///   or restarting (502, 503), are tried again until ``OpenBaoConfiguration/connectTimeout``
    ///   has passed, then `unavailable`;
    /// - a 403 is answered once by logging in again (the token may have expired or been
    ///   revoked), then returned;
    /// - the deadline passing is `timeout`.
    func send(
        _ method: HTTPMethod, _ path: String, body: Data? = nil, key: String? = nil, doing what: String,
        deadline: ContinuousClock.Instant, authenticated: Bool = true, token: String? = nil
    ) throws(KeepsakeError) -> Reply {
        let started = ContinuousClock.now
        let giveUp = min(deadline, started + configuration.connectTimeout)
        var pause = Duration.milliseconds(25)
        var retried = false
        var loggedInAgain = false
        var lastProblem = ""
        while true {
            let request = try makeRequest(
                method, path, body: body, key: key,
                token: authenticated ? try authenticator.token(client: self, deadline: deadline) : token)
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw KeepsakeError(
                    .timeout, store: store, key: key,
                    "could not \(what) within the store's deadline (\(configuration.timeout))\(lastProblem.isEmpty ? "" : ": \(lastProblem)")"
                )
            }
            let outcome: Result<HTTPClient.Response, any Error>
            do {
                outcome = .success(
                    try http.execute(request: request, deadline: .now() + .nanoseconds(Int64(remaining.nanoseconds)))
                        .wait())
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case let .success(response):
                let status = Int(response.status.code)
                if let newIndex = response.headers.first(name: "X-Vault-Index") {
                    index.withLock { $0 = newIndex }
                }
                let reply = Reply(
                    status: status, body: response.body.map { Data($0.readableBytesView) } ?? Data(), retried: retried)
                if status == 502 || status == 503 || status == 429 {
                    lastProblem =
                        status == 503
                        ? "the server is sealed or not ready (503: \(reply.errors))" : "HTTP \(status): \(reply.errors)"
                    retried = retried || method != .GET
                    guard ContinuousClock.now + pause < giveUp else {
                        throw KeepsakeError(.unavailable, store: store, key: key, "could not \(what): \(lastProblem)")
                    }
                    Thread.sleep(forTimeInterval: pause.seconds)
                    pause = min(pause * 2, .milliseconds(500))
                    continue
                }
                if status == 403, authenticated, !loggedInAgain, authenticator.canRenewCredentials {
                    loggedInAgain = true
                    authenticator.forget(reason: "the server refused the token (403: \(reply.errors))")
                    continue
                }
                return reply
            case let .failure(error):
                if let problem = Self.timeoutOrDeadline(error), ContinuousClock.now >= deadline {
                    throw KeepsakeError(
                        .timeout, store: store, key: key,
                        "could not \(what) within the store's deadline (\(configuration.timeout)): \(problem)")
                }
                if let trust = Self.trustProblem(error) {
                    throw KeepsakeError(
                        .unavailable, store: store, key: key,
                        "could not \(what): the server's certificate is not trusted (\(trust)); give the CA that signed it with cacert=PATH",
                        underlying: error)
                }
                lastProblem = Self.describe(error)
                // The request may have reached the server before the connection failed.
                retried = retried || method != .GET
                guard ContinuousClock.now + pause < giveUp else {
                    throw KeepsakeError(
                        .unavailable, store: store, key: key,
                        "could not \(what): the server at \(OpenBaoConfiguration.hostForURI(configuration.host)):\(configuration.port) cannot be reached (\(lastProblem))",
                        underlying: error)
                }
                Thread.sleep(forTimeInterval: pause.seconds)
                pause = min(pause * 2, .milliseconds(500))
            }
        }
    }

    /// A request with the token, the namespace, the read-after-write index and, for a body, its
    /// content type.
    private func makeRequest(
        _ method: HTTPMethod, _ path: String, body: Data?, key: String?, token: String?
    ) throws(KeepsakeError) -> HTTPClient.Request {
        var headers = HTTPHeaders()
        if let token { headers.add(name: "X-Vault-Token", value: token) }
        if let namespace = configuration.namespace { headers.add(name: "X-Vault-Namespace", value: namespace) }
        if let index = index.withLock({ $0 }) { headers.add(name: "X-Vault-Index", value: index) }
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        do {
            return try HTTPClient.Request(
                url: configuration.baseURL + path, method: method, headers: headers,
                body: body.map { .byteBuffer(ByteBuffer(bytes: $0)) })
        } catch {
            throw KeepsakeError(.invalidArgument, store: store, key: key, "the request URL is not valid: \(error)")
        }
    }

    /// GETs `paths` all at once (async-http-client spreads them over up to 8 kept-alive
    /// connections) and returns each answer that is final — a success, or a failure the server
    /// meant (404, 400) — in order; `nil` for one whose connection failed or that the server could
    /// not answer now (403, 429, 5xx), which the caller sends again with ``send(_:_:body:key:doing:deadline:authenticated:token:)``
    /// and its retries.
    func prefetch(_ paths: [String], deadline: ContinuousClock.Instant) throws(KeepsakeError) -> [Reply?] {
        let token = try authenticator.token(client: self, deadline: deadline)
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return paths.map { _ in nil } }
        var pending: [EventLoopFuture<HTTPClient.Response>?] = []
        for path in paths {
            let request = try makeRequest(.GET, path, body: nil, key: nil, token: token)
            pending.append(
                http.execute(request: request, deadline: .now() + .nanoseconds(Int64(remaining.nanoseconds))))
        }
        return pending.map { future in
            guard let response = try? future?.wait() else { return nil }  // sent again, with retries
            let status = Int(response.status.code)
            guard status < 500, status != 403, status != 429 else { return nil }
            if let newIndex = response.headers.first(name: "X-Vault-Index") { index.withLock { $0 = newIndex } }
            return Reply(
                status: status, body: response.body.map { Data($0.readableBytesView) } ?? Data(), retried: false)
        }
    }

    /// The server's answer as a JSON object, or `io` naming what was asked when it is not one.
    func object(of reply: Reply, key: String?, doing what: String) throws(KeepsakeError) -> [String: Any] {
        guard let object = reply.object else {
            throw KeepsakeError(
                .io, store: store, key: key,
                "could not \(what): the server's answer (HTTP \(reply.status)) is not a JSON object")
        }
        return object
    }

    /// A failure the server reported, as the `KeepsakeError` a caller can act on.
    func failure(_ reply: Reply, key: String?, doing what: String) -> KeepsakeError {
        switch reply.status {
        case 403:
            return KeepsakeError(
                .permissionDenied, store: store, key: key,
                "could not \(what): the server refused (403: \(reply.errors)); check the token's policies (migrate doctor lists them)"
            )
        case 404:
            return KeepsakeError(
                .notFound, store: store, key: key, "could not \(what): not found (404: \(reply.errors))")
        case 413:
            return KeepsakeError(
                .valueRefused, store: store, key: key,
                "could not \(what): the server refused the size (413: \(reply.errors))")
        case 500 where Self.mentionsSize(reply.errors):
            return KeepsakeError(
                .valueRefused, store: store, key: key,
                "could not \(what): the server's storage refused the entry's size (\(reply.errors))")
        default:
            return KeepsakeError(
                .io, store: store, key: key, "could not \(what): HTTP \(reply.status): \(reply.errors)")
        }
    }

    static func mentionsSize(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.contains("too large") || lowered.contains("exceeds") || lowered.contains("size")
    }

    private static func timeoutOrDeadline(_ error: any Error) -> String? {
        guard let error = error as? HTTPClientError else { return nil }
        switch error {
        case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .tlsHandshakeTimeout:
            return "\(error)"
        default: return nil
        }
    }

    private static func trustProblem(_ error: any Error) -> String? {
        if let ssl = error as? NIOSSLError, case .handshakeFailed = ssl { return "\(ssl)" }
        let text = String(describing: error)
        return text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed") ? text : nil
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: error)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    var milliseconds: Int { Int(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000) }
    var nanoseconds: Int { Int(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000) }
}

extension Data {
    /// JSON for a request body (the objects here hold only strings, numbers, booleans and
    /// arrays and objects of them).
    static func json(_ object: [String: Any], store: String, key: String?) throws(KeepsakeError) -> Data {
        do {
            return try JSONSerialization.data(withJSONObject: object)
        } catch {
            throw KeepsakeError(
                .encodingFailed, store: store, key: key, "could not write the request as JSON", underlying: error)
        }
    }
}
#endif
