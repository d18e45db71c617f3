#if CLI
import Foundation
import Keepsake
import Synchronization

/// `run`'s progress on standard error: records checked, then records written, each with the
/// rate and the time left, on one line rewritten in place. Shown only on a terminal, and never
/// with `--json` or `--quiet` (see ``ProgressDisplay/isShown(standardErrorIsTerminal:json:quiet:)``).
enum ProgressDisplay {
    /// Whether progress is shown: only when standard error is a terminal and the output is for
    /// a person, so that piped or machine-read output never holds it.
    static func isShown(standardErrorIsTerminal: Bool, json: Bool, quiet: Bool) -> Bool {
        standardErrorIsTerminal && !json && !quiet
    }

    /// One progress line: `writing 1200/5000 records, 350/s, about 11 s left`. The rate and the
    /// time left are left out until there is enough to measure (a tenth of a second, one record).
    static func line(_ verb: String, done: Int, total: Int, elapsed: Double) -> String {
        var text = "\(verb) \(done)/\(total) records"
        guard elapsed >= 0.1, done > 0 else { return text }
        let rate = Double(done) / elapsed
        text += ", \(rate >= 10 ? String(Int(rate.rounded())) : String(format: "%.1f", rate))/s"
        if done < total {
            text += ", about \(duration(Double(total - done) / rate)) left"
        } else {
            text += ", done in \(duration(elapsed))"
        }
        return text
    }

    /// `4 s`, `2 min 5 s`, `1 h 3 min`.
    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }
}

/// Draws ``ProgressDisplay`` lines for one `run`: at most ten times a second, and only once a
/// phase has taken ``delay`` (a quarter of a second unless `KEEPSAKE_PROGRESS_DELAY` says
/// otherwise), so a short run prints nothing. Called from the
/// migrator's progress callback and from the store's ``CommitProgress`` reports.
final class ProgressMeter: Sendable {
    private struct State {
        var phase = ""
        var phaseStart = Date()
        var lastDraw = Date.distantPast
        var drawn = false
    }

    private let state = Mutex(State())
    private let write: @Sendable (String) -> Void
    /// How long a phase runs before its progress is drawn, in seconds.
    let delay: Double

    /// The delay before progress is drawn: `KEEPSAKE_PROGRESS_DELAY` seconds (0–60) when set to
    /// such a number, else a quarter of a second.
    static func delay(environment: [String: String] = ProcessInfo.processInfo.environment) -> Double {
        guard let text = environment["KEEPSAKE_PROGRESS_DELAY"], let seconds = Double(text),
            seconds.isFinite, (0...60).contains(seconds)
        else { return 0.25 }
        return seconds
    }

    init(
        delay: Double = ProgressMeter.delay(),
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        self.delay = delay
        self.write = write
    }

    /// Records `done` of `total` in `phase` (`checking`, `writing`).
    func update(_ phase: String, done: Int, total: Int, now: Date = Date()) {
        let text: String? = state.withLock { state in
            if state.phase != phase {
                state.phase = phase
                state.phaseStart = now
                state.lastDraw = .distantPast
                if state.drawn { write("\n") }
                state.drawn = false
            }
            let elapsed = now.timeIntervalSince(state.phaseStart)
            let finished = done >= total
            guard elapsed >= delay || (finished && state.drawn) else { return nil }
            guard finished || now.timeIntervalSince(state.lastDraw) >= 0.1 else { return nil }
            state.lastDraw = now
            state.drawn = true
            return ProgressDisplay.line(phase, done: done, total: total, elapsed: elapsed)
        }
        if let text { write("\r\u{1B}[K" + text) }
    }

    /// Ends the last line drawn, if any.
    func finish() {
        let drawn = state.withLock { state in
            defer { state.drawn = false }
            return state.drawn
        }
        if drawn { write("\n") }
    }
}
#endif
