#if CLI
import Foundation
import Keepsake

/// A date as the CLI prints it: ISO 8601 UTC to the millisecond, by the package's one ISO 8601
/// implementation (the one records are written with). A date past the year 9999 (a trial of an
/// enormous length ends there) or before the year 1 is said to be so, never printed wrongly.
func isoText(_ date: Date) -> String {
    do throws(ISO8601.Failure) {
        return try ISO8601.millisecondString(from: date)
    } catch {
        return date.timeIntervalSinceReferenceDate > 0
            ? "after 9999-12-31T23:59:59.999Z" : "before 0001-01-01T00:00:00.000Z"
    }
}
#endif
