package import FileKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call as the engine reports it: a ``KeepsakeError``'s code and cause.
extension SystemFailure {
    package var cause: KeepsakeError.Cause {
        if let fileType { return .other("it is \(fileType), not a regular file") }
        return .posix(call: call, errno: errno)
    }

    /// `.invalidArgument` for a path that is not a regular file (a bad location), else by `errno`.
    package var code: KeepsakeError.Code {
        if fileType != nil { return .invalidArgument }
        switch errno {
        case EACCES, EPERM, EROFS: return .permissionDenied
        default: return .io
        }
    }

    /// A ``KeepsakeError`` with this failure's code and cause.
    package func error(store: String, key: String? = nil, _ message: String) -> KeepsakeError {
        KeepsakeError(code, store: store, key: key, message, cause: cause)
    }
}
