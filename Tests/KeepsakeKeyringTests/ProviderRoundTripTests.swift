import Foundation
import Testing

extension KeyringTests {
    /// `migrate put` then `migrate get` against whichever provider this run's keyring runs: into a
    /// new item (CreateItem), and over items another client created (secret-tool, which runs the
    /// provider's own prompts), replaced in place (SetSecret) — once with a plain record and once
    /// with a record holding KeePassXC's placeholders, which KeePassXC would expand when the
    /// secret is read. Each put must read back exactly, or be refused (the provider returned the
    /// secret altered, or would) with the key reading as it did before.
    @Suite("migrate put and get against the provider")
    struct ProviderRoundTripTests {
        let service = PrivateKeyring.uniqueService("round-trip")
        var store: String { "keyring:" + service }

        static let plain = #"{"data":{"alias":"Ada"},"schema":"Person","version":3}"#
        static let placeholders =
            #"{"data":{"a":"{TITLE}","b":"{URL}","c":"{S:service}","d":"{PASSWORD}"},"schema":"Note","version":1}"#

        /// Puts `value` under `key` and reads the key back. `before` is what the key held (`nil`:
        /// nothing), which a refused put must leave as it was.
        func roundTrip(_ key: String, _ value: String, before: String?) throws {
            let put = try Shell.run(
                [migrateExecutable, "put", key, "--store", store], stdin: Data(value.utf8), timeout: .seconds(30))
            let get = try runMigrate(["get", key, "--store", store])
            if put.status == 0 {
                #expect(get.status == 0, "get after a put that succeeded: \(get.stderr)")
                #expect(get.stdout == value, "read back \(get.stdout.utf8.count) bytes: \(get.stdout.prefix(300))")
                return
            }
            let refusal = put.stderr
            #expect(
                refusal.contains("different secret") || refusal.contains("expands placeholders"),
                "the put failed for another reason (exit \(put.status)): \(refusal)")
            if let before {
                #expect(get.status == 0 && get.stdout == before, "a refused put changed the key: \(get.stdout)")
            } else {
                #expect(get.status == 66, "a refused put left a record: \(get.stdout)\(get.stderr)")
            }
        }

        @Test("a plain record into a new item reads back exactly")
        func newItem() throws {
            try roundTrip("person", Self.plain, before: nil)
        }

        @Test("a plain record and a placeholder record over items secret-tool created: exact, or refused and unchanged")
        func replacedItems() throws {
            for key in ["replaced", "note"] {
                try PrivateKeyring.secretToolStore(
                    label: "seed \(key)", attributes: [("service", service), ("username", key)], secret: "seed")
            }
            try roundTrip("replaced", Self.plain, before: "seed")
            try roundTrip("note", Self.placeholders, before: "seed")
        }
    }
}
