import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Running the helper tools (gdbus, the daemons) with an explicit environment.
enum Subprocess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The absolute path of `tool` in `path` (a `PATH` value), or `nil`.
    static func which(_ tool: String, path: String?) -> String? {
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !directory.isEmpty {
            let candidate = directory + "/" + tool
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `executable` with `arguments` and exactly `environment`, waits for it (killing it
    /// after `timeout`), and returns what it printed.
    ///
    /// Output goes to files in `scratch`, not pipes, so a process that leaves a descendant
    /// holding the descriptors cannot make this wait for ever.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], scratch: URL,
        timeout: Duration = .seconds(30), stdin: Data? = nil
    ) throws -> Result {
        let base = scratch.appendingPathComponent("run-\(UUID().uuidString.prefix(12))")
        let outURL = URL(fileURLWithPath: base.path + ".out"), errURL = URL(fileURLWithPath: base.path + ".err")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let inURL = URL(fileURLWithPath: base.path + ".in")
        try (stdin ?? Data()).write(to: inURL)
        defer {
            // Scratch files of this call only.
            _ = unlink(outURL.path)
            _ = unlink(errURL.path)
            _ = unlink(inURL.path)
        }
        let input = try FileHandle(forReadingFrom: inURL)
        defer { try? input.close() }  // the child has its own copy
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()  // a close failure of a scratch file changes nothing for the caller
            try? err.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // SIGKILL: a process started from a test thread may inherit a blocked SIGTERM.
        let killer = DispatchWorkItem { [process] in if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let (seconds, attoseconds) = timeout.components
        DispatchQueue.global().asyncAfter(
            deadline: .now() + .milliseconds(Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)),
            execute: killer)
        process.waitUntilExit()
        killer.cancel()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}
