/// How a record was laid out in storage.
public enum RecordForm: String, Sendable, Codable, Hashable {
    /// `{"schema": …, "version": …, "data": {…}}`, what Keepsake writes.
    case envelope
    /// The model's fields with a top-level integer `"version"` (the TrialInfo article's form).
    case inlineVersion
    /// The model's fields alone, the version told by the exact key set (the Person article's form).
    case bare
}
