import Foundation
import KeepsakeTesting

/// The two-release scenario on one store, played with the built `person-release-4`,
/// `person-release-3` and `migrate`: the newer release writes a record with a phone; the older
/// reads it as newer and renames it; the newer reads back its phone and the new alias; `migrate`
/// (at V3) reports the record as `newerReadable` and exits 0.
///
/// Both the store-independent tests (TwoReleaseTests) and the keyring's (serialized with the
/// tests that lock the keyring) play it and expect ``Observed/mismatches`` to be empty.
public enum TwoReleaseScenario {
    /// What each step printed, and what differed from the expected output.
    public struct Observed: Sendable {
        public let steps: [(name: String, result: BuiltExecutable.Result)]
        /// Every step whose exit status or output was not the expected one, described.
        public let mismatches: [String]
    }

    /// What the two releases store in the end, as an envelope.
    public static let finalEnvelope =
        #"{"data":{"alias":"Countess","email":"ada@example.com","phone":"+1-555-0100"},"oldestReader":3,"schema":"Person","version":4}"#

    /// Plays the scenario on the store `uri`, opened with `options` (`--key-file PATH`, …).
    public static func play(uri: String, options: [String] = []) throws -> Observed {
        let store = ["--store", uri] + options
        let newer = BuiltExecutable(named: "person-release-4"), older = BuiltExecutable(named: "person-release-3")
        let expectations: [(String, BuiltExecutable, [String], String?)] = [
            ("the newer release saves", newer, ["save", "Ada", "ada@example.com", "+1-555-0100"], ""),
            (
                "the older release reads", older, ["read"],
                #"{"alias":"Ada","email":"ada@example.com","latestVersion":3,"newer":true,"storedVersion":4}"# + "\n"
            ),
            ("the older release renames", older, ["rename", "Countess"], ""),
            (
                "the newer release reads its phone and the new alias", newer, ["read"],
                #"{"alias":"Countess","email":"ada@example.com","latestVersion":4,"newer":false,"phone":"+1-555-0100","storedVersion":4}"#
                    + "\n"
            )
        ]
        var steps: [(name: String, result: BuiltExecutable.Result)] = []
        var mismatches: [String] = []
        for (name, executable, arguments, expected) in expectations {
            let result = try executable.run(arguments + store)
            steps.append((name, result))
            if result.status != 0 || (expected.map { $0 != result.stdout } ?? false) {
                mismatches.append(
                    "\(name): exit \(result.status), printed \(result.stdout.debugDescription), "
                        + "expected \((expected ?? "").debugDescription); stderr: \(result.stderr)")
            }
        }
        let status = try BuiltExecutable(named: "migrate").run(["status", "--json"] + store)
        steps.append(("migrate status", status))
        // `status --json` prints one object; its `records` are the reports (an unparsable output is a
        // mismatch below, with the output quoted).
        let object = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let reports = object?["records"] as? [[String: Any]]
        let person = reports?.first { $0["key"] as? String == "person" }
        if status.status != 0 || person?["state"] as? String != "newerReadable" || person?["storedVersion"] as? Int != 4
        {
            mismatches.append(
                "migrate status: exit \(status.status), printed \(status.stdout); expected the person "
                    + "record as newerReadable at version 4 and exit 0; stderr: \(status.stderr)")
        }
        return Observed(steps: steps, mismatches: mismatches)
    }
}
