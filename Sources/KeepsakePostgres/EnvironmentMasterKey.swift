#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium

/// A master key in an environment variable, for servers whose secrets arrive that way: 32
/// bytes as 64 hexadecimal digits or as base64.
///
/// ```swift
/// let store = try PostgresStore(
///     configuration: PostgresConfiguration(parsing: databaseURL),
///     masterKey: .provider(EnvironmentMasterKey(variable: "KEEPSAKE_MASTER_KEY")))
/// ```
///
/// Make one with `openssl rand -hex 32`. A key in a file (a mounted secret) is
/// `MasterKeySource.keyFile(path:)`: 32 raw bytes, mode 0600.
public struct EnvironmentMasterKey: MasterKeyProvider {
    /// The variable's name.
    public let variable: String
    private let environment: [String: String]

    /// The key in `variable` of `environment` (the process environment by default).
    public init(variable: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.variable = variable
        self.environment = environment
    }

    /// `environment variable NAME`.
    public var description: String { "environment variable \(variable)" }

    /// The 32-byte key.
    ///
    /// - Throws: `KeepsakeError.Code.notFound` when the variable is unset or empty
    ///   (whatever `createIfAbsent` says: this source cannot store a key);
    ///   `KeepsakeError.Code.invalidArgument` when it is not 32 bytes in hex or
    ///   base64. No message holds the variable's value.
    public func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
        guard let text = environment[variable]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            throw KeepsakeError(.notFound, "the \(description) is not set; put 32 bytes in it as 64 hex digits")
        }
        let utf8 = Array(text.utf8)
        if utf8.count == 64, utf8.allSatisfy({ Self.hexValue($0) != nil }) {
            return SecureBytes(count: 32) { buffer in
                for index in 0..<32 {
                    buffer[index] = (Self.hexValue(utf8[2 * index])! << 4) | Self.hexValue(utf8[2 * index + 1])!
                }
            }
        }
        if let decoded = Data(base64Encoded: text), decoded.count == 32 {
            return SecureBytes(copying: decoded)
        }
        throw KeepsakeError(
            .invalidArgument, "the \(description) does not hold 32 bytes as 64 hex digits or base64")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
#endif
