/// The parts of a path given by a user, taken apart byte by byte as POSIX `dirname` and
/// `basename` do.
///
/// Foundation's path-component methods trap on some relative paths (`deletingLastPathComponent`
/// of `"k"`, `"."` or `"a/"` stops the process), so paths from the command line, a
/// configuration or an app are never given to them. Only `/` separates components; every other
/// byte (a `~`, a `.`, bytes that were not UTF-8 and were repaired) is part of a name, and
/// nothing is expanded or resolved.
package enum FilePath {
    private static let slash = UInt8(ascii: "/")

    /// The directory holding what `path` names, as POSIX `dirname`: `"k"`, `"."`, `".."`, `"~"`,
    /// `"a/"` and `""` → `"."`; `"/"`, `"//"` and `"/a"` → `"/"`; `"a/b"` and `"a//b/"` → `"a"`.
    package static func directory(of path: String) -> String {
        var bytes = Array(path.utf8)
        // Trailing slashes name the same thing as none (but "/" stays "/").
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        guard let last = bytes.lastIndex(of: slash) else { return "." }
        bytes.removeSubrange(last...)
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        if bytes.isEmpty || bytes == [slash] { return "/" }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The last component of `path`, as POSIX `basename`: `"a/b/"` → `"b"`, `"k"` → `"k"`,
    /// `"/"` → `"/"`, `""` → `"."`.
    package static func lastComponent(of path: String) -> String {
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty else { return "." }
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        if bytes == [slash] { return "/" }
        if let last = bytes.lastIndex(of: slash) { bytes.removeSubrange(...last) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
