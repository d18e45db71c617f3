import Foundation

// Asking the private bus, with gdbus.

extension TestKeyring {
    func gdbusResult(_ arguments: [String]) throws(TestKeyringError) -> Subprocess.Result {
        do {
            return try gdbus(arguments)
        } catch {
            throw TestKeyringError(.operationFailed, "could not run gdbus: \(error)")
        }
    }

    func gdbusChecked(_ arguments: [String], doing what: String) throws(TestKeyringError) -> Subprocess.Result {
        let result = try gdbusResult(arguments)
        guard result.status == 0 else {
            throw TestKeyringError(
                .operationFailed, "\(what) failed: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return result
    }

    func gdbus(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run(
            tools.gdbus, ["call", "--address", busAddress, "--timeout", "5"] + arguments,
            environment: daemonEnvironment, scratch: scratch, timeout: .seconds(10))
    }
}
