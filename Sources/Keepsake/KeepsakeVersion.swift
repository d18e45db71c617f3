/// The version of this Keepsake package.
///
/// The one place the version is written: `migrate --version` prints it, and `CHANGELOG.md` names it
/// in its latest release heading (a test checks that the two agree). Versions follow semantic
/// versioning.
public enum KeepsakeVersion {
    /// The package's version, e.g. `"0.1.0"`.
    public static let current = "0.1.0"
}
