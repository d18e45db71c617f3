import Foundation

/// ISO 8601 dates as Keepsake writes and reads them, without a formatter object — exactly.
///
/// A `Date` is a number of seconds since 2001-01-01T00:00:00Z (a `Double`). Keepsake keeps
/// dates from 0001-01-01T00:00:00Z up to, not including, 10000-01-01T00:00:00Z: the instants
/// a four-digit year can write.
///
/// **Written**: UTC, `2025-03-01T09:30:00.250Z` — at least three fraction digits, and more
/// when the date is finer than a millisecond: as many as the shortest decimal that reads back
/// to the very same `Date` (`2025-03-01T09:30:00.2501234Z`). Writing is lossless: a written
/// date reads back equal to the date that was written, bit for bit. A date outside the range
/// (or not finite) cannot be written and is refused, never wrapped or cut.
///
/// **Read**: `YYYY-MM-DDThh:mm:ss`, an optional fraction of up to ``maxFractionDigits``
/// digits, then `Z` or an offset `±hh:mm` / `±hhmm` (at most ±23:59). The calendar is checked
/// (no February 30, month 13, hour 24, minute or second 60, year 0), and the instant must be
/// in the range. The text is read exactly: the result is the `Date` nearest to the instant it
/// names.
package enum ISO8601 {
    /// An exact instant: `whole` seconds since 2001-01-01T00:00:00Z (rounded down) plus the
    /// decimal fraction `0.fraction` (digits 0–9, no trailing zero).
    package struct DecimalSeconds: Sendable, Equatable {
        package var whole: Int64
        package var fraction: [UInt8]
    }

    /// Why a date cannot be read or written; never quotes the date itself.
    package struct Failure: Error, Sendable, Equatable {
        package let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// 0001-01-01T00:00:00Z, in seconds since 2001-01-01T00:00:00Z: the earliest date kept.
    package static let earliest: TimeInterval = -63_113_904_000
    /// 10000-01-01T00:00:00Z, in seconds since 2001-01-01T00:00:00Z: the first date not kept.
    package static let end: TimeInterval = 252_423_993_600
    /// The longest fraction read (an exact date never needs more than about 770 digits).
    package static let maxFractionDigits = 1000
    /// The most digits after the seconds' point a date is kept with, read or written: every
    /// `Date` at least a millisecond away from 2001-01-01T00:00:00Z needs no more.
    package static let maxKeptFractionDigits = 20

    /// Seconds from 1970-01-01 to 2001-01-01, the reference `Date` counts from.
    package static let referenceSince1970: Int64 = 978_307_200

    /// Whether `date` can be written.
    package static func check(_ date: Date) throws(Failure) {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite else { throw Failure("the date is not a finite number of seconds") }
        guard seconds >= earliest, seconds < end else {
            throw Failure("the date is outside the years 0001–9999")
        }
    }

    /// A date stored as a number of seconds since 2001-01-01T00:00:00Z (Foundation's default),
    /// given as JSON number text, read exactly (see ``exactDate(_:)``).
    package static func date(secondsSinceReference text: String) throws(Failure) -> Date {
        try exactDate(decimalSeconds(number: text, unit: .seconds, epoch: 0))
    }

    /// The exact instant JSON number `text` names, read as a count of `unit`s since `epoch`
    /// seconds after 2001-01-01T00:00:00Z (`-978_307_200` for 1970), as decimal seconds since
    /// 2001-01-01T00:00:00Z. Linear in the text; no number is rounded.
    ///
    /// - Throws: ``Failure`` for text that is not a JSON number, an instant outside 0001–9999,
    ///   or more than ``maxKeptFractionDigits`` digits after the seconds' point.
    package static func decimalSeconds(number text: String, unit: NumericUnit, epoch: Int64) throws(Failure)
        -> DecimalSeconds
    {
        let notNumber = Failure("the number of seconds is not a number")
        let outside = Failure("the date is outside the years 0001–9999")
        var negative = false
        var digits: [UInt8] = []
        var pointAt: Int?
        var exponent = 0
        var exponentNegative = false
        var inExponent = false
        var sawExponentDigit = false
        for (index, byte) in text.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "-") where index == 0: negative = true
            case UInt8(ascii: "0")...UInt8(ascii: "9") where inExponent:
                sawExponentDigit = true
                // Saturate: any exponent past a million names no date in the range.
                exponent = min(exponent * 10 + Int(byte - UInt8(ascii: "0")), 1_000_000)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(byte - UInt8(ascii: "0"))
            case UInt8(ascii: ".") where pointAt == nil && !inExponent: pointAt = digits.count
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                guard !inExponent else { throw notNumber }
                inExponent = true
            case UInt8(ascii: "-") where inExponent && !sawExponentDigit: exponentNegative = true
            case UInt8(ascii: "+") where inExponent && !sawExponentDigit: break
            default: throw notNumber
            }
        }
        guard !digits.isEmpty, !inExponent || sawExponentDigit else { throw notNumber }
        // value = 0.d1d2… × 10^point, in seconds.
        var point = (pointAt ?? digits.count) + (exponentNegative ? -exponent : exponent)
        if unit == .milliseconds { point -= 3 }
        let leading = digits.firstIndex { $0 != 0 } ?? digits.count
        point -= leading
        digits.removeFirst(leading)
        while digits.last == 0 { digits.removeLast() }
        guard !digits.isEmpty else { return DecimalSeconds(whole: epoch, fraction: []) }
        guard point <= 13 else { throw outside }
        guard digits.count - point <= maxKeptFractionDigits else { throw tooFine }
        var magnitude: Int64 = 0
        var fraction: [UInt8] = []
        if point < 0 {
            fraction = [UInt8](repeating: 0, count: -point) + digits
        } else {
            for index in 0..<point { magnitude = magnitude * 10 + Int64(index < digits.count ? digits[index] : 0) }
            if point < digits.count { fraction = Array(digits[point...]) }
        }
        var whole = magnitude
        if negative {
            whole = -magnitude
            if !fraction.isEmpty {
                whole -= 1
                fraction = complement(fraction)
            }
        }
        return DecimalSeconds(whole: whole + epoch, fraction: fraction)
    }

    /// The JSON number text of the instant `seconds` names, as a count of `unit`s since `epoch`
    /// seconds after 2001-01-01T00:00:00Z: exact, shortest (no exponent, no trailing zeros).
    package static func numberText(_ seconds: DecimalSeconds, unit: NumericUnit, epoch: Int64) -> String {
        var whole = seconds.whole - epoch
        var fraction = seconds.fraction
        var negative = false
        if whole < 0 {
            negative = true
            if fraction.isEmpty {
                whole = -whole
            } else {
                // whole + 0.f = −((|whole| − 1) + (1 − 0.f))
                whole = -(whole + 1)
                fraction = complement(fraction)
            }
        }
        if unit == .milliseconds {
            while fraction.count < 3 { fraction.append(0) }
            whole = whole * 1000 + Int64(fraction[0]) * 100 + Int64(fraction[1]) * 10 + Int64(fraction[2])
            fraction.removeFirst(3)
            while fraction.last == 0 { fraction.removeLast() }
        }
        var text = negative && (whole != 0 || !fraction.isEmpty) ? "-" : ""
        text += String(whole)
        if !fraction.isEmpty {
            text += "." + String(decoding: fraction.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
        }
        return text
    }

    /// The unit of a date stored as a number.
    package enum NumericUnit: Sendable {
        case seconds, milliseconds
    }

    // MARK: Writing

    /// The date as Keepsake writes it: UTC, at least milliseconds, lossless.
    ///
    /// - Throws: ``Failure`` for a date outside 0001–9999, not finite, or needing more than
    ///   ``maxKeptFractionDigits`` fraction digits.
    package static func string(from date: Date) throws(Failure) -> String {
        try string(from: decimalSeconds(of: date), minimumFractionDigits: 3)
    }

    /// The instant `seconds` names as ISO 8601 UTC, with at least `minimumFractionDigits` digits
    /// after the seconds' point (none at all when it is 0 and the instant is a whole second).
    package static func string(from seconds: DecimalSeconds, minimumFractionDigits: Int) -> String {
        var fraction = seconds.fraction
        while fraction.count < minimumFractionDigits { fraction.append(0) }
        return format(secondsSince1970: seconds.whole + referenceSince1970, fraction: fraction)
    }

    /// The exact decimal Keepsake writes for `date`: the shortest decimal number of seconds
    /// since 2001-01-01T00:00:00Z that reads back as the very same `Date`.
    ///
    /// - Throws: ``Failure`` for a date outside 0001–9999, not finite, or needing more than
    ///   ``maxKeptFractionDigits`` digits after the seconds' point (only a date within a
    ///   millisecond of 2001-01-01T00:00:00Z can, such as `1e-320` seconds).
    package static func decimalSeconds(of date: Date) throws(Failure) -> DecimalSeconds {
        try check(date)
        let seconds = date.timeIntervalSinceReferenceDate
        // Fast path: a whole number of milliseconds (ms / 1000, one correctly rounded division,
        // reads back as `seconds`).
        let millis = (seconds * 1000).rounded()
        if Double(Int64(millis)) / 1000 == seconds {
            let total = Int64(millis)
            let whole = total >= 0 ? total / 1000 : (total - 999) / 1000
            var fraction = total - whole * 1000
            var digits: [UInt8] = []
            if fraction != 0 {
                var scale: Int64 = 100
                while fraction != 0 {
                    digits.append(UInt8(fraction / scale))
                    fraction %= scale
                    scale /= 10
                }
            }
            return DecimalSeconds(whole: whole, fraction: digits)
        }
        // The shortest decimal that reads back as `seconds`, split into whole seconds (floor)
        // and the fraction's digits.
        var (digits, exponent) = decimal(seconds)
        var whole: Int64
        var fraction: [UInt8]
        if exponent >= 0 {
            digits += [UInt8](repeating: 0, count: exponent)
            fraction = []
        } else if digits.count > -exponent {
            fraction = Array(digits[(digits.count + exponent)...])
            digits.removeLast(-exponent)
        } else {
            guard -exponent <= maxKeptFractionDigits else { throw tooFine }
            fraction = [UInt8](repeating: 0, count: -exponent - digits.count) + digits
            digits = [0]
        }
        guard fraction.count <= maxKeptFractionDigits else { throw tooFine }
        whole = digits.reduce(0) { $0 * 10 + Int64($1) }  // at most 12 digits in the range
        if seconds < 0 {
            whole = -whole
            if !fraction.isEmpty {
                whole -= 1
                fraction = complement(fraction)
            }
        }
        return DecimalSeconds(whole: whole, fraction: fraction)
    }

    private static let tooFine = Failure(
        """
        the date needs more than \(maxKeptFractionDigits) digits after the seconds' point, more than Keepsake keeps \
        (only a date within a millisecond of 2001-01-01T00:00:00Z can)
        """)

    /// The date to the millisecond, rounded down (never into the next year): for texts an
    /// older reader parses with a millisecond format, where the precision does not matter.
    ///
    /// - Throws: ``Failure`` for a date outside 0001–9999 or not finite.
    package static func millisecondString(from date: Date) throws(Failure) -> String {
        try check(date)
        let millis = Int64((date.timeIntervalSinceReferenceDate * 1000).rounded(.down))
        let whole = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let fraction = millis - whole * 1000
        let digits = [UInt8(fraction / 100), UInt8(fraction / 10 % 10), UInt8(fraction % 10)]
        return format(secondsSince1970: whole + referenceSince1970, fraction: digits)
    }

    /// `YYYY-MM-DDThh:mm:ss.<fraction>Z` for whole seconds since 1970 in the range; without the
    /// point when `fraction` is empty.
    private static func format(secondsSince1970 total: Int64, fraction: [UInt8]) -> String {
        var days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let secondOfDay = total - days * 86_400
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
        precondition((1...9999).contains(year), "ISO8601: a checked date fell outside 0001–9999")

        var out = [UInt8]()
        out.reserveCapacity(21 + fraction.count)
        func put(_ value: Int64, width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        put(year, width: 4)
        out.append(UInt8(ascii: "-"))
        put(month, width: 2)
        out.append(UInt8(ascii: "-"))
        put(day, width: 2)
        out.append(UInt8(ascii: "T"))
        put(secondOfDay / 3600, width: 2)
        out.append(UInt8(ascii: ":"))
        put(secondOfDay / 60 % 60, width: 2)
        out.append(UInt8(ascii: ":"))
        put(secondOfDay % 60, width: 2)
        if !fraction.isEmpty {
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: fraction.map { UInt8(ascii: "0") + $0 })
        }
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `|value|` as decimal digits (no leading or trailing zeros, `[0]` for zero) and a power
    /// of ten: `|value| = digits × 10^exponent`. The digits are Swift's shortest representation
    /// that reads back as `value`.
    static func decimal(_ value: Double) -> (digits: [UInt8], exponent: Int) {
        var digits: [UInt8] = []
        var exponent = 0
        var afterPoint = false
        var exponentText: [UInt8] = []
        var inExponent = false
        for byte in value.magnitude.description.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9") where inExponent:
                exponentText.append(byte)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits.append(byte - UInt8(ascii: "0"))
                if afterPoint { exponent -= 1 }
            case UInt8(ascii: "."): afterPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "-") where inExponent: exponentText.append(byte)
            default: break  // "+" of the exponent
            }
        }
        if !exponentText.isEmpty, let shift = Int(String(decoding: exponentText, as: UTF8.self)) {
            exponent += shift
        }
        while digits.count > 1, digits.first == 0 { digits.removeFirst() }
        while digits.count > 1, digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits == [0] { exponent = 0 }
        return (digits, exponent)
    }

    /// `10^n − f` for the fraction digits `f` (n digits, last one not zero): `1 − 0.f`.
    static func complement(_ fraction: [UInt8]) -> [UInt8] {
        var result = fraction.map { 9 - $0 }
        result[result.count - 1] += 1
        return result
    }

    // MARK: Reading

    /// The date `text` names.
    ///
    /// - Throws: ``Failure`` saying what is wrong: the syntax, an impossible calendar date, an
    ///   offset out of range, or an instant outside 0001–9999.
    package static func date(from text: String) throws(Failure) -> Date {
        let date = try nearestDate(to: decimalSeconds(from: text))
        try check(date)
        return date
    }

    /// The exact instant `text` names, as decimal seconds since 2001-01-01T00:00:00Z.
    ///
    /// - Throws: ``Failure`` saying what is wrong with the syntax or the calendar date; the
    ///   range is not checked.
    package static func decimalSeconds(from text: String) throws(Failure) -> DecimalSeconds {
        var text = text
        // `withUTF8` rethrows untyped: carry the typed failure out as a Result.
        return try text.withUTF8 { bytes in Result { () throws(Failure) in try parse(bytes) } }.get()
    }

    /// The date `seconds` names exactly, or the reason it cannot be kept: outside 0001–9999, or
    /// finer than a `Date` holds at that instant — a date is refused rather than rounded.
    package static func exactDate(_ seconds: DecimalSeconds) throws(Failure) -> Date {
        guard seconds.fraction.count <= maxKeptFractionDigits else { throw tooFine }
        let date = try nearestDate(to: seconds)
        try check(date)
        // Whole milliseconds in the range always read back as written (one correctly rounded
        // division each way, as `decimalSeconds(of:)`'s fast path reads it): no second look.
        if seconds.fraction.count <= 3 { return date }
        let kept = try decimalSeconds(of: date)
        guard kept == seconds else {
            throw Failure(
                """
                the date is finer than a Date holds at that instant (the nearest Date has \(kept.fraction.count) \
                digits after the seconds' point); it is refused rather than rounded
                """)
        }
        return date
    }

    /// The `Date` nearest to the instant `seconds` names, rounded once.
    package static func nearestDate(to seconds: DecimalSeconds) throws(Failure) -> Date {
        let whole = seconds.whole
        let digits = seconds.fraction
        let value: Double
        if digits.isEmpty {
            value = Double(whole)
        } else if digits.count <= 4, whole.magnitude < 1 << 40 {
            // (whole × 10^k + f) and 10^k are exact in a Double (below 2^53 in the range), and
            // one IEEE division rounds their quotient — the decimal itself — correctly.
            var scale: Int64 = 1
            var numerator = whole
            for digit in digits {
                scale *= 10
                numerator = numerator * 10 + Int64(digit)
            }
            value = Double(numerator) / Double(scale)
        } else {
            let text: String
            if whole >= 0 {
                text = "\(whole)." + String(decoding: digits.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
            } else {
                // whole + 0.f = −((|whole| − 1) + (1 − 0.f))
                text =
                    "-\(-(whole + 1))."
                    + String(decoding: complement(digits).map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
            }
            guard let parsed = Double(text) else { throw Failure("the number of seconds is not a number") }
            value = parsed
        }
        return Date(timeIntervalSinceReferenceDate: value)
    }

    private static func parse(_ s: UnsafeBufferPointer<UInt8>) throws(Failure) -> DecimalSeconds {
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
        let syntax = Failure("not an ISO 8601 date-time such as 2025-03-01T09:30:00.250Z")
        guard let year = number(4) else { throw syntax }
        guard take(UInt8(ascii: "-")) else {
            if i < s.count, s[i] >= UInt8(ascii: "0"), s[i] <= UInt8(ascii: "9") {
                throw Failure("the year has more than four digits; dates are kept for the years 0001–9999")
            }
            throw syntax
        }
        guard let month = number(2), take(UInt8(ascii: "-")), let day = number(2),
            take(UInt8(ascii: "T")) || take(UInt8(ascii: "t")),
            let hour = number(2), take(UInt8(ascii: ":")), let minute = number(2), take(UInt8(ascii: ":")),
            let second = number(2)
        else { throw syntax }
        guard year >= 1 else { throw Failure("year 0 does not exist; dates are kept for the years 0001–9999") }
        guard (1...12).contains(month) else { throw Failure("month \(month) does not exist") }
        guard (1...daysIn(month: month, year: year)).contains(day) else {
            throw Failure("day \(day) does not exist in month \(month) of that year")
        }
        guard hour < 24 else { throw Failure("hour \(hour) does not exist (00–23)") }
        guard minute < 60 else { throw Failure("minute \(minute) does not exist (00–59)") }
        guard second < 60 else { throw Failure("second \(second) cannot be kept (00–59; no leap seconds)") }
        var fraction: UnsafeBufferPointer<UInt8>.SubSequence = s[0..<0]
        if take(UInt8(ascii: ".")) {
            let start = i
            while i < s.count, s[i] >= UInt8(ascii: "0"), s[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > start else { throw syntax }
            guard i - start <= maxFractionDigits else {
                throw Failure("the fraction of a second has more than \(maxFractionDigits) digits")
            }
            fraction = s[start..<i]
        }
        var offsetSeconds: Int64 = 0
        if take(UInt8(ascii: "Z")) || take(UInt8(ascii: "z")) {
        } else if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
            let sign: Int64 = s[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let hours = number(2) else { throw syntax }
            _ = take(UInt8(ascii: ":"))
            guard let minutes = number(2) else { throw syntax }
            guard hours < 24, minutes < 60 else { throw Failure("the UTC offset is out of range (at most ±23:59)") }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            throw syntax
        }
        guard i == s.count else { throw syntax }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let whole = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds - referenceSince1970
        var digits = Array(fraction).map { $0 - UInt8(ascii: "0") }
        while digits.last == 0 { digits.removeLast() }
        return DecimalSeconds(whole: whole, fraction: digits)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
