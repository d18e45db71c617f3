import Foundation
import Testing

/// Python's `keyring` package (SecretService backend, through `secretstorage`): the most used
/// keyring client, installed by `scripts/with-private-keyring` when pip can reach PyPI.
enum PythonKeyring {
    static var path: String? { PrivateKeyring.environment["KEEPSAKE_TEST_PYTHONPATH"] }

    static var isAvailable: Bool { PrivateKeyring.unavailableReason == nil && path != nil }

    /// Why the Python interop tests cannot run, as the harness found it.
    static var unavailableReason: String {
        PrivateKeyring.environment["KEEPSAKE_TEST_PYTHON_UNAVAILABLE"]
            ?? "KEEPSAKE_TEST_PYTHONPATH is not set: run under scripts/with-private-keyring, which installs Python's keyring and secretstorage"
    }

    /// `keyring.set_password(service, username, secret)`.
    static func setPassword(service: String, username: String, _ secret: String) throws {
        _ = try run(
            "import sys, keyring; keyring.set_password(sys.argv[1], sys.argv[2], sys.stdin.read())",
            [service, username], stdin: secret)
    }

    /// `keyring.get_password(service, username)`, `nil` when it returns None.
    static func getPassword(service: String, username: String) throws -> String? {
        let output = try run(
            "import sys, json, keyring; print(json.dumps(keyring.get_password(sys.argv[1], sys.argv[2])))",
            [service, username])
        return try JSONDecoder().decode(String?.self, from: Data(output.utf8))
    }

    private static func run(_ program: String, _ arguments: [String], stdin: String? = nil) throws -> String {
        let result = try Shell.run(
            ["python3", "-c", program] + arguments, stdin: stdin.map { Data($0.utf8) },
            environment: ["PYTHONPATH": path, "PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"])
        try #require(result.status == 0, "python keyring failed: \(result.stderr)")
        return result.stdout
    }
}
