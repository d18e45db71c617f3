import FileKit
import Keepsake
import Testing

/// Paths taken apart byte by byte, as POSIX `dirname` and `basename` do: Foundation's path
/// methods trap on some of these (issue 21).
@Suite("FilePath: directory and last component of untrusted paths")
struct FilePathTests {
    @Test(
        "directory(of:) is POSIX dirname",
        arguments: [
            ("k", "."), (".", "."), ("..", "."), ("~", "."), ("a/", "."), ("dir/", "."), ("a//", "."), ("", "."),
            ("/", "/"), ("//", "/"), ("/k", "/"), ("/a/", "/"), ("//a", "/"), ("a/b", "a"), ("a//b/", "a"),
            ("/a/b", "/a"), ("/a//b//", "/a"), ("./k", "."), ("../k", ".."), ("~/k", "~"), ("\u{FFFD}", "."),
            ("é/\u{FFFD}", "é"), ("a/b/c", "a/b")
        ])
    func directory(_ path: String, _ expected: String) {
        #expect(FilePath.directory(of: path) == expected)
    }

    @Test(
        "lastComponent(of:) is POSIX basename",
        arguments: [
            ("k", "k"), (".", "."), ("..", ".."), ("~", "~"), ("a/", "a"), ("/", "/"), ("//", "/"), ("", "."),
            ("a/b", "b"), ("a//b//", "b"), ("/a", "a"), ("é/\u{FFFD}", "\u{FFFD}")
        ])
    func lastComponent(_ path: String, _ expected: String) {
        #expect(FilePath.lastComponent(of: path) == expected)
    }
}
