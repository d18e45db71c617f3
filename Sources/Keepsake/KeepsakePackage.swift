/// Facts about this Keepsake package.
///
/// (Not named `KeepsakePackage`: symbol graph extraction drops a public type whose name is the
/// module's followed by `Version`, so its documentation would never be built.)
public enum KeepsakePackage {
    /// The package's version, e.g. `"0.1.0"`, following semantic versioning.
    ///
    /// The one place the version is written: `migrate --version` prints it, and `CHANGELOG.md`
    /// names it in its latest release heading (a test checks that the two agree).
    public static let version = "0.1.0"
}
