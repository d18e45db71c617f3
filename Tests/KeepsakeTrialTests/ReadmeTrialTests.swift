// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import KeepsakeTrial
import Testing

@Suite("The trial example of the documentation")
struct ReadmeTrialTests {
    /// The trial example, verbatim from the Trial enforcement article and the KeepsakeTrial
    /// catalog. Compiled here; it runs against the real keyring in KeepsakeKeyringTests'
    /// scenarios, not in this suite.
    func example() throws {
        let trial = try TrialGuard.keyring(service: "com.example.notes", appID: "com.example.notes", length: .days(14))
        switch trial.status() {
        case .notStarted:                    _ = trial.start()
        case let .active(running):           print("\(running.daysLeft) days left")
        case .expired:                       print("The trial has ended")
        case .clockMovedBack, .unknown:      print("Cannot tell now; try again later")  // never a fresh trial
        }
    }

    @Test("the documentation's trial example is the code compiled here", arguments: [
        "Sources/Keepsake/Keepsake.docc/TrialEnforcement.md",
        "Sources/KeepsakeTrial/KeepsakeTrial.docc/KeepsakeTrial.md",
    ])
    func verbatim(page: String) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        let start = try #require(text.range(of: "```swift\nimport KeepsakeTrial\n\n"))
        let body = text[start.upperBound...]
        let end = try #require(body.range(of: "```"))
        let snippet = body[..<end.lowerBound].split(separator: "\n").map { "        " + $0 }.joined(separator: "\n")
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        #expect(source.contains(snippet))
    }
}
