import Foundation

/// ISO 8601 dates as Keepsake writes and reads them, without a formatter object.
///
/// Written: UTC with milliseconds, `2025-03-01T09:30:00.250Z` (rounded to the nearest
/// millisecond, so a date read back encodes to the same text). Read: `YYYY-MM-DDThh:mm:ss`,
/// an optional fraction of any length, then `Z` or an offset `±hh:mm` / `±hhmm`.
enum ISO8601 {
    static func string(from date: Date) -> String {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var days = totalMillis >= 0 ? totalMillis / 86_400_000 : (totalMillis - 86_399_999) / 86_400_000
        let millisOfDay = totalMillis - days * 86_400_000
        // Civil from days (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        var out = [UInt8]()
        out.reserveCapacity(24)
        func put(_ value: Int64, width: Int) {
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: width)
            var rest = value
            for index in stride(from: width - 1, through: 0, by: -1) {
                digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            out.append(contentsOf: digits)
        }
        put(year, width: 4); out.append(UInt8(ascii: "-"))
        put(month, width: 2); out.append(UInt8(ascii: "-"))
        put(day, width: 2); out.append(UInt8(ascii: "T"))
        put(millisOfDay / 3_600_000, width: 2); out.append(UInt8(ascii: ":"))
        put(millisOfDay / 60_000 % 60, width: 2); out.append(UInt8(ascii: ":"))
        put(millisOfDay / 1000 % 60, width: 2); out.append(UInt8(ascii: "."))
        put(millisOfDay % 1000, width: 3); out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    static func date(from text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(Array($0)) }
    }

    private static func parse(_ s: [UInt8]) -> Date? {
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= s.count else { return nil }
            var value: Int64 = 0
            for _ in 0..<width {
                let byte = s[i]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                i += 1
            }
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard i < s.count, s[i] == byte else { return false }
            i += 1
            return true
        }
        guard let year = number(4), take(UInt8(ascii: "-")), let month = number(2), take(UInt8(ascii: "-")),
              let day = number(2), take(UInt8(ascii: "T")) || take(UInt8(ascii: "t")),
              let hour = number(2), take(UInt8(ascii: ":")), let minute = number(2), take(UInt8(ascii: ":")),
              let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if take(UInt8(ascii: ".")) {
            let start = i
            while i < s.count, s[i] >= UInt8(ascii: "0"), s[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > start, let value = Double("0." + String(decoding: s[start..<i], as: UTF8.self)) else {
                return nil
            }
            fraction = value
        }
        var offsetSeconds: Int64 = 0
        if take(UInt8(ascii: "Z")) || take(UInt8(ascii: "z")) {
        } else if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
            let sign: Int64 = s[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let hours = number(2) else { return nil }
            _ = take(UInt8(ascii: ":"))
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard i == s.count else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
