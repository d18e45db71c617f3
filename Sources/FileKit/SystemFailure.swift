/// A failed system call: its name and `errno` — or a path that is not a regular file (a FIFO,
/// a socket, a device, a directory), refused before anything is read from it. Paths are not
/// kept: they may hold a hashed record name at most, but messages say which file in words.
package struct SystemFailure: Error, Equatable {
    package let call: String
    package let errno: Int32
    /// What the path is, when it is not a regular file: `"a FIFO"`, `"a socket"`.
    package let fileType: String?

    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
        self.fileType = nil
    }

    /// The path is `fileType`, not a regular file.
    package init(notRegularFile fileType: String) {
        self.call = "fstat"
        self.errno = 0
        self.fileType = fileType
    }
}
