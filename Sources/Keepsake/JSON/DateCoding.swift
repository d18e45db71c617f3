import Foundation

// How each `DateEncoding` reads a stored JSON value and writes a `Date`, exactly: the one place
// `JSONValueDecoder`, `CanonicalEncoder` and `CanonicalJSON.foundationEncode` turn dates into
// JSON and back.

extension DateEncoding {
    /// The JSON kind this form stores, for messages.
    private var storedAs: String {
        switch self {
        case .deferredToDate: "a number of seconds since 2001-01-01 or an ISO 8601 string"
        case .secondsSince1970: "a number of seconds since 1970-01-01"
        case .millisecondsSince1970: "a number of milliseconds since 1970-01-01"
        case .iso8601: "an ISO 8601 string of whole seconds"
        case .iso8601WithFractionalSeconds: "an ISO 8601 string"
        case let .formatted(format): "a string in the format \"\(format)\""
        }
    }

    /// The date a stored value holds in this form, read exactly.
    ///
    /// - Returns: `nil` when `value` is neither a string nor a number (a type mismatch the
    ///   caller reports).
    /// - Throws: ``ISO8601/Failure`` when the value is of the other kind than this form stores,
    ///   does not fit the form, names no instant a `Date` holds exactly, or lies outside
    ///   0001–9999.
    func date(from value: JSONValue) throws(ISO8601.Failure) -> Date? {
        switch (self, value) {
        case let (.deferredToDate, .number(text)):
            return try ISO8601.exactDate(ISO8601.decimalSeconds(number: text, unit: .seconds, epoch: 0))
        case let (.secondsSince1970, .number(text)):
            return try ISO8601.exactDate(
                ISO8601.decimalSeconds(number: text, unit: .seconds, epoch: -ISO8601.referenceSince1970))
        case let (.millisecondsSince1970, .number(text)):
            return try ISO8601.exactDate(
                ISO8601.decimalSeconds(number: text, unit: .milliseconds, epoch: -ISO8601.referenceSince1970))
        case let (.deferredToDate, .string(text)), let (.iso8601WithFractionalSeconds, .string(text)):
            return try ISO8601.exactDate(ISO8601.decimalSeconds(from: text))
        case let (.iso8601, .string(text)):
            let seconds = try ISO8601.decimalSeconds(from: text)
            guard seconds.fraction.isEmpty else {
                throw ISO8601.Failure(
                    "the date has a fraction of a second, but the version's dates are stored as \(storedAs) (\(self))")
            }
            return try ISO8601.exactDate(seconds)
        case let (.formatted(format), .string(text)):
            return try Self.formattedDate(text, format: format)
        case (_, .string), (_, .number):
            throw ISO8601.Failure(
                "the version's dates are stored as \(storedAs) (\(self)), but this is \(value.kindName)")
        default:
            return nil
        }
    }

    /// The JSON value this form writes for `date`, which reads back as the very same `Date`.
    ///
    /// - Throws: ``ISO8601/Failure`` for a date outside 0001–9999, not finite, or that this
    ///   form cannot write exactly.
    func written(_ date: Date) throws(ISO8601.Failure) -> WrittenDate {
        switch self {
        case .deferredToDate, .iso8601WithFractionalSeconds:
            return .string(try ISO8601.string(from: date))
        case .secondsSince1970:
            return .number(
                ISO8601.numberText(
                    try ISO8601.decimalSeconds(of: date), unit: .seconds, epoch: -ISO8601.referenceSince1970))
        case .millisecondsSince1970:
            return .number(
                ISO8601.numberText(
                    try ISO8601.decimalSeconds(of: date), unit: .milliseconds, epoch: -ISO8601.referenceSince1970))
        case .iso8601:
            let seconds = try ISO8601.decimalSeconds(of: date)
            guard seconds.fraction.isEmpty else {
                throw ISO8601.Failure(
                    "the date has a fraction of a second, which the version's date encoding (\(self)) cannot store")
            }
            return .string(ISO8601.string(from: seconds, minimumFractionDigits: 0))
        case let .formatted(format):
            try ISO8601.check(date)
            let formatter = Self.formatter(format)
            let text = formatter.string(from: date)
            guard formatter.date(from: text) == date else {
                throw ISO8601.Failure(
                    "the date is finer than the version's date format \"\(format)\" writes, so it cannot be stored exactly"
                )
            }
            return .string(text)
        }
    }

    /// What is wrong with this form, for chain validation: a format that does not read back the
    /// date it writes for a midnight (a date-only format is fine; a date finer than it writes
    /// cannot be saved in it, which `encodingFailed` says when it happens).
    var problem: String? {
        guard case let .formatted(format) = self else { return nil }
        let sample = Date(timeIntervalSince1970: 1_714_521_600)  // 2024-05-01T00:00:00Z
        do throws(ISO8601.Failure) {
            guard case let .string(text) = try written(sample), try date(from: .string(text)) == sample else {
                return "its date format \"\(format)\" does not read back the date it writes"
            }
            return nil
        } catch {
            return """
                its date format "\(format)" does not read back the date it writes for 2024-05-01T00:00:00Z \
                (\(error.reason)); use a format with at least the year, month and day
                """
        }
    }

    /// A date as one form writes it: JSON string contents or JSON number text.
    enum WrittenDate {
        case string(String)
        case number(String)
    }

    /// Stored strings longer than this are refused before a formatter sees them.
    private static let maxFormattedLength = 256

    private static func formattedDate(_ text: String, format: String) throws(ISO8601.Failure) -> Date {
        let mismatch = ISO8601.Failure("the date is not exactly in the version's date format \"\(format)\"")
        guard text.utf8.count <= maxFormattedLength else { throw mismatch }
        let formatter = formatter(format)
        guard let date = formatter.date(from: text) else { throw mismatch }
        try ISO8601.check(date)
        // Exactly what the format writes for that date: nothing ignored, nothing rounded.
        guard formatter.string(from: date) == text else { throw mismatch }
        return date
    }

    private static func formatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.isLenient = false
        formatter.dateFormat = format
        return formatter
    }
}
