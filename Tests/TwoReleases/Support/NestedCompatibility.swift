import Foundation
import Keepsake

// Release A's chain ends at ContactV0; release B's at ContactV1, which adds keys inside an
// object A knows (`address.zip`), inside array elements A knows (`tags[].color`), inside the
// values of a dictionary A knows (`labels[*].hint`), and at the top level (`phone`), and
// declares A's readers compatible.

public struct AddressV0: Codable, Equatable, Sendable {
    public var city: String
}

public struct TagV0: Codable, Equatable, Sendable {
    public var name: String
}

public struct LabelV0: Codable, Equatable, Sendable {
    public var text: String
}

public struct ContactV0: ModelVersion, Equatable {
    public static let version = 0
    public var name: String
    public var address: AddressV0
    public var tags: [TagV0]
    public var labels: [String: LabelV0]
    public var note: String?
}

public struct AddressV1: Codable, Equatable, Sendable {
    public var city: String
    public var zip: String?
}

public struct TagV1: Codable, Equatable, Sendable {
    public var name: String
    public var color: String?
}

public struct LabelV1: Codable, Equatable, Sendable {
    public var text: String
    public var hint: String?
}

public struct ContactV1: ModelVersion, Equatable {
    public typealias Predecessor = ContactV0
    public static let version = 1
    public static let oldestReader = 0
    public var name: String
    public var address: AddressV1
    public var tags: [TagV1]
    public var labels: [String: LabelV1]
    public var note: String?
    public var phone: String?
    public init(
        name: String, address: AddressV1, tags: [TagV1], labels: [String: LabelV1], note: String? = nil,
        phone: String? = nil
    ) {
        self.name = name
        self.address = address
        self.tags = tags
        self.labels = labels
        self.note = note
        self.phone = phone
    }
    public init(migrating previous: ContactV0, context: MigrationContext) {
        self.init(
            name: previous.name, address: AddressV1(city: previous.address.city, zip: nil),
            tags: previous.tags.map { TagV1(name: $0.name, color: nil) },
            labels: previous.labels.mapValues { LabelV1(text: $0.text, hint: nil) }, note: previous.note)
    }
}

/// The scenario every store plays (Tests/KeepsakeTests, KeepsakeSodiumTests, KeepsakeKeyringTests):
/// release B stores a contact with nested keys release A does not know; A renames and saves; B
/// reads back every one of its keys; A clears an optional and removes a dictionary entry, and B
/// sees both; A removes an array element whose siblings hold keys it does not know, and the save
/// is refused with nothing written.
public enum NestedCompatibility {
    /// Release A's chain, ending at ``ContactV0``.
    public static let releaseA = ModelChain<ContactV0>(name: "Contact", defaultKeys: ["contact"])
    /// Release B's chain, ending at ``ContactV1``, which declares A's readers compatible.
    public static let releaseB = ModelChain<ContactV1>(name: "Contact", defaultKeys: ["contact"])

    /// What release B stores first.
    public static let newerValue = ContactV1(
        name: "Ada", address: AddressV1(city: "London", zip: "N1"),
        tags: [TagV1(name: "work", color: "red"), TagV1(name: "home", color: "blue")],
        labels: ["a": LabelV1(text: "first", hint: "h1"), "b": LabelV1(text: "second", hint: "h2")],
        note: "kept", phone: "555")

    /// Plays the scenario on `store` (empty under the key `contact`) and returns every
    /// difference from what should happen, described; empty when all held.
    public static func mismatches(on store: any RecordStore) -> [String] {
        var found: [String] = []
        let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0))
        let vault = Vault(store: store, context: context)
        do throws(KeepsakeError) {
            try vault.save(newerValue, in: releaseB)
            guard var seen = try vault.load(releaseA)?.value else { return ["release A read nothing"] }
            if seen.address != AddressV0(city: "London") { found.append("A read the address as \(seen.address)") }
            seen.name = "Ada L."
            seen.address.city = "Cambridge"
            seen.tags[1].name = "house"
            seen.labels["a"]?.text = "one"
            try vault.save(seen, in: releaseA)
            var expected = newerValue
            expected.name = "Ada L."
            expected.address.city = "Cambridge"
            expected.tags[1].name = "house"
            expected.labels["a"]?.text = "one"
            let back = try vault.load(releaseB)?.value
            if back != expected {
                found.append("after A's rename, B read \(String(describing: back)), expected \(expected)")
            }

            seen.note = nil
            seen.labels["b"] = nil
            try vault.save(seen, in: releaseA)
            expected.note = nil
            expected.labels["b"] = nil
            let cleared = try vault.load(releaseB)?.value
            if cleared != expected {
                found.append("after A's clearing, B read \(String(describing: cleared)), expected \(expected)")
            }

            let before = try store.data(forKey: "contact")
            seen.tags.removeFirst()
            do throws(KeepsakeError) {
                try vault.save(seen, in: releaseA)
                found.append("A's save of a shorter tags array was not refused")
            } catch {
                if error.code != .mergeRefused || !error.message.contains("data.tags[0]") || error.key != "contact"
                    || error.store != store.uri
                {
                    found.append(
                        "A's save of a shorter tags array failed with \(error), expected mergeRefused at data.tags[0]")
                }
            }
            if try store.data(forKey: "contact") != before { found.append("the refused save wrote something") }
        } catch {
            found.append("unexpected error: \(error)")
        }
        return found
    }
}
