import Foundation

/// How a version's dates are stored: the form the encoder of the release that stored them
/// wrote.
///
/// An app's old releases stored dates however their `JSONEncoder` was set up. A version says
/// which form its records hold with ``ModelVersion/dateEncoding``; nothing is guessed. Every
/// `Date` of that version — top-level or nested, in arrays, dictionaries and optionals — is read
/// in that form, and written in it when that version is the latest a release writes:
///
/// ```swift
/// public struct AccountV0: ModelVersion {
///     public static let version = 0
///     public static let dateEncoding = DateEncoding.secondsSince1970
///     public let lastLogin: Date  // stored as "lastLogin":1714557600
/// }
/// ```
///
/// Every form is read and written exactly. A stored value that does not fit the declared form
/// (a string where a number is declared, a number finer than a `Date` holds at that instant, a
/// date outside the years 0001–9999) is that record's
/// ``KeepsakeError/Code/corruptRecord`` error naming the field, never a different date; a date
/// the form cannot write exactly (a fraction of a second under ``iso8601``) is
/// ``KeepsakeError/Code/encodingFailed``, never a rounded one.
public enum DateEncoding: Sendable, Hashable, CustomStringConvertible {
    /// The default: Foundation's. A number is seconds since 2001-01-01T00:00:00Z, what
    /// `JSONEncoder` writes when its `dateEncodingStrategy` is left alone (`.deferredToDate`);
    /// a string is ISO 8601, what Keepsake writes. Written as ISO 8601 in UTC with at least
    /// milliseconds (`2024-05-01T10:00:00.000Z`), and more fraction digits when the date needs
    /// them to read back identical.
    case deferredToDate
    /// A number of seconds since 1970-01-01T00:00:00Z (`1714557600`, or `1714557600.25`),
    /// what `.secondsSince1970` writes. Written the same way, without an exponent.
    case secondsSince1970
    /// A number of milliseconds since 1970-01-01T00:00:00Z (`1714557600000`), what
    /// `.millisecondsSince1970` writes. Written the same way, without an exponent.
    case millisecondsSince1970
    /// An ISO 8601 string of whole seconds (`2024-05-01T10:00:00Z`), what `.iso8601` writes.
    /// Any UTC offset is read; a fraction of a second is not this form. Written in UTC; a date
    /// with a fraction of a second cannot be written in this form.
    case iso8601
    /// An ISO 8601 string with a fraction of a second (`2024-05-01T10:00:00.250Z`), as an
    /// `ISO8601DateFormatter` with `.withFractionalSeconds` writes; one without a fraction is
    /// read too. Written as ``deferredToDate`` writes.
    case iso8601WithFractionalSeconds
    /// A string in a fixed `DateFormatter` format (`"yyyy-MM-dd HH:mm:ss"`), read and written
    /// with the `en_US_POSIX` locale, the Gregorian calendar and UTC unless the format names
    /// a zone. A stored string must be exactly what the format writes for the date it names; a
    /// date the format cannot hold exactly (finer than it writes: a time of day under
    /// `"yyyy-MM-dd"`) cannot be written. Chain validation refuses a format that does not read
    /// back the date it writes (one without a day, such as `"yyyy"`).
    case formatted(String)

    public var description: String {
        switch self {
        case .deferredToDate: "deferredToDate"
        case .secondsSince1970: "secondsSince1970"
        case .millisecondsSince1970: "millisecondsSince1970"
        case .iso8601: "iso8601"
        case .iso8601WithFractionalSeconds: "iso8601WithFractionalSeconds"
        case let .formatted(format): "formatted(\(format))"
        }
    }
}
