import Foundation

/// The `migrate` binary under test, driven as a black box.
struct Migrate: Sendable {
    /// Its absolute path.
    let path: String

    /// `--binary`, else .build/release/migrate or .build/debug/migrate if built, else a debug build
    /// (`swift build --product migrate`, its output on standard error). Relative paths are from the
    /// repository root, the current directory.
    static func resolve(_ binary: String?) throws -> Migrate {
        var chosen = binary
        if chosen == nil {
            chosen = [".build/release/migrate", ".build/debug/migrate"].first { access($0, X_OK) == 0 }
        }
        if chosen == nil {
            let status = try Child.run(
                ["swift", "build", "--product", "migrate"], searchPath: true, stdout: .standardError)
            guard status == 0 else { throw Abort(status: status) }
            chosen = ".build/debug/migrate"
        }
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return Migrate(path: URL(fileURLWithPath: chosen!, relativeTo: root).standardizedFileURL.path)
    }

    /// The command line of `migrate ARGUMENTS…`.
    func command(_ arguments: [String]) -> [String] { [path] + arguments }

    /// Runs `migrate ARGUMENTS…` (standard output to /dev/null unless told); a failure ends the
    /// crash loop with its status, as `set -e` ended the script.
    func must(_ arguments: [String], stdin: Child.Stream = .inherit, stdout: Child.Stream = .null) throws {
        let status = try Child.run(command(arguments), stdin: stdin, stdout: stdout)
        guard status == 0 else { throw Abort(status: status) }
    }

    /// Whether `migrate ARGUMENTS…` succeeds; its standard error goes to /dev/null unless told.
    /// `cleanup`: it runs even once the crash loop was asked to stop (Child.spawn).
    func succeeds(
        _ arguments: [String], stdout: Child.Stream = .null, stderr: Child.Stream = .null, cleanup: Bool = false
    ) throws -> Bool {
        try Child.run(command(arguments), stdout: stdout, stderr: stderr, cleanup: cleanup) == 0
    }

    /// Runs `migrate ARGUMENTS…` as `must` does: how long it took, in whole milliseconds.
    func timed(_ arguments: [String]) throws -> Int {
        let elapsed = try ContinuousClock().measure { try must(arguments) }
        return elapsed.milliseconds
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
