import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, waited for and killed by its pid.
final class Child {
    /// Where one of a child's standard streams goes.
    enum Stream {
        /// The crash loop's own.
        case inherit
        /// /dev/null.
        case null
        /// A file: read for standard input, created or truncated for output.
        case file(String)
        /// The crash loop's standard error (for standard output: `>&2`).
        case standardError
    }

    let pid: pid_t
    /// The exit status once reaped: the code, or 128 plus the signal that ended it.
    private(set) var status: Int32?

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `arguments[0]` (an absolute path, or with `searchPath` a name looked up in PATH).
    /// - Throws: `Abort` with status 127 if it cannot be started, as a shell would; with 128 plus
    ///   the signal once the crash loop was asked to stop, unless the command is part of its
    ///   `cleanup`.
    static func spawn(
        _ arguments: [String], searchPath: Bool = false, stdin: Stream = .inherit, stdout: Stream = .inherit,
        stderr: Stream = .inherit, cleanup: Bool = false
    ) throws -> Child {
        if !cleanup, let signal = Cleanup.shared.interruption { throw Abort(status: 128 + signal) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit:
                break
            case .null:
                let flags = descriptor == 0 ? O_RDONLY : O_WRONLY
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", flags, 0)
            case .file(let path):
                let flags = descriptor == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o666)
            case .standardError:
                posix_spawn_file_actions_adddup2(&actions, 2, descriptor)
            }
        }
        // The crash loop blocks SIGINT and SIGTERM for its cleanup thread (Cleanup.swift): the
        // child gets them back, unblocked and with their default action.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for string in argv + envp { free(string) }
        }
        var pid = pid_t()
        let error =
            searchPath
            ? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
            : posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard error == 0 else {
            throw Abort(status: 127, message: "cannot run \(arguments[0]): \(String(cString: strerror(error)))")
        }
        return Child(pid: pid)
    }

    /// Runs a command to its end: its exit status.
    static func run(
        _ arguments: [String], searchPath: Bool = false, stdin: Stream = .inherit, stdout: Stream = .inherit,
        stderr: Stream = .inherit, cleanup: Bool = false
    ) throws -> Int32 {
        let child = try spawn(
            arguments, searchPath: searchPath, stdin: stdin, stdout: stdout, stderr: stderr, cleanup: cleanup)
        return child.wait()
    }

    /// Whether it is still running (reaps it if it is not).
    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        let reaped = waitpid(pid, &raw, WNOHANG)
        if reaped == pid {
            status = Self.exitStatus(raw)
            return false
        }
        return reaped == 0
    }

    /// Waits for it to end: its exit status.
    @discardableResult
    func wait() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 {
            guard errno == EINTR else {
                status = 127
                return 127
            }
        }
        let status = Self.exitStatus(raw)
        self.status = status
        return status
    }

    /// Sends SIGKILL.
    func kill() { sendKill(pid) }

    /// A `waitpid` status as a shell reports it.
    private static func exitStatus(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}

/// `kill(pid, SIGKILL)`, apart from `Child.kill()` whose name hides it.
private func sendKill(_ pid: pid_t) { _ = kill(pid, SIGKILL) }

/// What ends the crash loop early, as `set -e` did the script: the exit status, and what to say.
struct Abort: Error {
    var status: Int32 = 1
    var message: String?
}

/// The crash loop's output: unbuffered lines, so that they interleave with its children's as
/// they happen.
enum Console {
    /// A line on standard output.
    static func out(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    /// A line on standard error.
    static func error(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}
