import Foundation
import Keepsake
import Synchronization

/// An executable of the package under test — an app's own `migrate`, say — found where SwiftPM
/// builds it, beside the test bundle, and run the way an operator runs it.
///
/// ```swift
/// let tool = BuiltExecutable(named: "settings-migrate")
/// let result = try tool.run(["status", "--json", "--store", "defaults:" + suitePath])
/// #expect(result.status == 0)
/// ```
public struct BuiltExecutable: Sendable {
    /// The executable's path (or `<name>-binary-not-found`, which fails to run with a clear name).
    public let path: String

    /// The executable at `path`.
    public init(path: String) {
        self.path = path
    }

    /// The executable `name` beside the test bundle, one or two folders up (SwiftPM puts
    /// `<products>/<Package>PackageTests.xctest` beside the package's executables), or the path in
    /// the environment variable `variable` when that is set.
    public init(named name: String, overriddenBy variable: String? = nil) {
        if let variable, let explicit = ProcessInfo.processInfo.environment[variable] {
            path = explicit
            return
        }
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) {
                path = candidate
                return
            }
            directory.deleteLastPathComponent()
        }
        path = "\(name)-binary-not-found"
    }

    /// What a run printed and how it exited.
    public struct Result: Sendable {
        /// The exit status, or the signal's number when a signal ended the process.
        public let status: Int32
        /// Everything written to standard output, decoded as UTF-8.
        public let stdout: String
        /// Everything written to standard error, decoded as UTF-8.
        public let stderr: String
    }

    /// Runs the executable with `arguments`, `stdin` as its standard input (none when `nil`) and
    /// `environment` added to this process's, and waits for it to exit.
    ///
    /// - Throws: When the executable cannot be started.
    public func run(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), errors = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
        }
        // Read both pipes at once: a child that fills one while this waits on the other would hang.
        let errorText = Mutex(Data())
        let group = DispatchGroup()
        group.enter()
        Blocking.start {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorText.withLock { $0 = data }
            group.leave()
        }
        let out = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: errorText.withLock { String(decoding: $0, as: UTF8.self) })
    }

    /// ``run(_:stdin:environment:)`` from an async test, for a run that takes seconds (`swift
    /// package resolve`): it waits on a thread of its own, not on one of Swift's cooperative
    /// threads — as many as the machine has cores, shared by every test running at once, so a
    /// few long blocking waits there stall all the others.
    ///
    /// - Throws: When the executable cannot be started.
    public func runOffThePool(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) async throws -> Result {
        let executable = self
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Swift.Result { try executable.run(arguments, stdin: stdin, environment: environment) })
            }
        }
    }

    /// ``run(_:stdin:environment:)`` under GNU time (`/usr/bin/time`, Debian's `time` package),
    /// with the run's peak memory: its maximum resident set size, in KiB — how a test shows
    /// what a command over many records costs beside the records' own size.
    ///
    /// - Throws: When GNU time is not installed, or the executable cannot be started.
    public func runMeasuringPeakMemory(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> (result: Result, peakKiB: Int) {
        let time = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: time) else {
            throw MeasuringError(description: "\(time) is not installed (Debian's time package)")
        }
        let report = FileManager.default.temporaryDirectory.path + "/keepsake-time-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: report) }  // a leftover report file harms nothing
        let result = try BuiltExecutable(path: time).run(
            ["-f", "%M", "-o", report, path] + arguments, stdin: stdin, environment: environment)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        // GNU time writes "Command exited with non-zero status N" first when the command failed.
        guard let peak = text.split(whereSeparator: \.isNewline).last.flatMap({ Int($0) }) else {
            throw MeasuringError(description: "GNU time wrote no peak memory: \(text)")
        }
        return (result, peak)
    }

    /// Why a run could not be measured.
    public struct MeasuringError: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }
}
