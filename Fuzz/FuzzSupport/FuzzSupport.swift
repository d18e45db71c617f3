// What every libFuzzer target of Keepsake shares: handing over to libFuzzer's driver, a private
// scratch directory, and reading and writing whole files with plain system calls.
import Foundation

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// Runs libFuzzer's driver on `callback` with this process's arguments, and exits with its status.
///
/// SwiftPM links an executable target's top-level code as `main`, which shadows libFuzzer's own
/// `main`; so a target's top-level code calls this instead.
public func runLibFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(runDriver(&argc, &argv, callback))
}

/// A directory of this process's own, `keepsake-fuzz-<name>-<pid>`, under KEEPSAKE_FUZZ_TMP
/// (scripts/fuzz makes one and removes it afterwards), else on tmpfs when there is one (stores
/// fsync every commit), else in the temporary directory. It is not created here.
public func fuzzScratchPath(_ name: String) -> String {
    let base =
        ProcessInfo.processInfo.environment["KEEPSAKE_FUZZ_TMP"]
        ?? (FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
    return "\(base)/keepsake-fuzz-\(name)-\(getpid())"
}

/// A file's bytes, or `nil` when it cannot be opened. Read with plain system calls: Foundation's
/// file reading leaks a buffer on an empty file, which LeakSanitizer would report.
public func readWholeFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        precondition(count >= 0, "cannot read \(path)")
        guard count > 0 else { return bytes }
        bytes += buffer[0..<count]
    }
}

/// Replaces the contents of the file at `path` (created 0600 if absent) with `bytes`.
public func writeWholeFile(_ path: String, _ bytes: UnsafeRawBufferPointer) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "cannot create \(path)")
    defer { close(fd) }
    var done = 0
    while done < bytes.count {
        let count = write(fd, bytes.baseAddress! + done, bytes.count - done)
        precondition(count > 0, "cannot write \(path)")
        done += count
    }
}
