#if PostgreSQL
import Foundation
import Keepsake

extension PostgresConfiguration {
    /// The password as libpq finds it: `PGPASSWORD`, else the first matching line of the
    /// passfile (`passfile`, `PGPASSFILE`, `~/.pgpass`): `host:port:database:user:password`,
    /// `*` matching anything, `\:` and `\\` escaped. A passfile that is absent gives no
    /// password; one that group or others can read is ignored, as libpq does; one that cannot
    /// be read is an error.
    static func password(
        environment: [String: String], passfile: String?, endpoint: Endpoint, database: String, user: String,
        uri: String
    ) throws(KeepsakeError) -> String? {
        if let password = environment["PGPASSWORD"], !password.isEmpty { return password }
        let path: String
        if let given = passfile ?? environment["PGPASSFILE"], !given.isEmpty {
            path = given
        } else if let home = environment["HOME"], !home.isEmpty {
            path = home + "/.pgpass"
        } else {
            return nil
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            let code = errno
            throw KeepsakeError(
                .io, store: uri, "the passfile \(printable(path)) cannot be read",
                cause: .posix(call: "stat", errno: code))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, (info.st_mode & 0o077) == 0 else { return nil }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw KeepsakeError(.io, store: uri, "the passfile \(printable(path)) cannot be read")
        }
        let (host, port): (String, Int)
        switch endpoint {
        case let .tcp(name, number): (host, port) = (name, number)
        case let .unixSocket(_, number): (host, port) = ("localhost", number)
        }
        let wanted = [host, String(port), database, user]
        for line in String(decoding: contents, as: UTF8.self).split(whereSeparator: \.isNewline) {
            if line.hasPrefix("#") { continue }
            let fields = passfileFields(line)
            guard fields.count == 5 else { continue }
            let matches = zip(fields.prefix(4), wanted).allSatisfy { field, value in field == "*" || field == value }
            if matches { return fields[4] }
        }
        return nil
    }

    /// A passfile line split at unescaped colons, with `\:` and `\\` unescaped.
    static func passfileFields(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
#endif
