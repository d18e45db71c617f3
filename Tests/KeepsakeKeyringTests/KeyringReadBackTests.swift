import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeKeyring

extension KeyringTests {
    /// Every write is read back: a record a provider would return altered is never stored
    /// silently. gnome-keyring returns secrets as stored; a provider that rewrites them
    /// (KeePassXC's placeholders) is acted by the store's read-back hook.
    @Suite("Writes read back")
    struct ReadBack {
        /// Records holding KeePassXC's placeholders, which it expands when it returns a secret.
        static let placeholderRecords = [
            #"{"data":{"title":"{TITLE}"},"schema":"Note","version":1}"#,
            #"{"data":{"url":"{URL}","user":"{USERNAME}"},"schema":"Note","version":1}"#,
            #"{"data":{"attr":"{S:service}","other":"{S:username}"},"schema":"Note","version":1}"#,
            #"{"data":{"password":"{PASSWORD}{PASSWORD}"},"schema":"Note","version":1}"#,
            "{REF:P@I:0}{T-REPLACE-RX:/a/b/c/}{{PASSWORD}}"
        ]

        /// What KeePassXC does to `{TITLE}` on read, acted out on `@TITLE@` (a token no provider
        /// expands, and that Keepsake does not refuse up front against KeePassXC).
        static let expandTitle: @Sendable (Data) -> Data = { data in
            Data(String(decoding: data, as: UTF8.self).replacingOccurrences(of: "@TITLE@", with: "entry title").utf8)
        }

        @Test(
            "records holding {TITLE}, {URL}, {S:service}, {PASSWORD} round-trip exactly, new and replaced",
            PrivateKeyring.notAgainst(.keePassXC, "it expands the placeholders; the next test holds it to that"))
        func placeholdersRoundTrip() throws {
            let store = try PrivateKeyring.freshStore("placeholders")
            for (index, text) in Self.placeholderRecords.enumerated() {
                let key = "record-\(index)"
                try store.setData(Data(text.utf8), forKey: key)
                #expect(try store.data(forKey: key) == Data(text.utf8))
                #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: key) == text)
            }
            // Replacing in place: each key now holds the next record.
            for (index, text) in Self.placeholderRecords.enumerated() {
                let key = "record-\((index + 1) % Self.placeholderRecords.count)"
                try store.setData(Data(text.utf8), forKey: key)
                #expect(try store.data(forKey: key) == Data(text.utf8))
            }
            #expect(try store.keys().count == Self.placeholderRecords.count)
        }

        @Test(
            "KeePassXC: a record holding placeholders is stored exactly or refused, new or replaced; never altered",
            .enabled(if: PrivateKeyring.runningProvider == .keePassXC, "only KeePassXC rewrites secrets"))
        func placeholdersAgainstKeePassXC() throws {
            let store = try PrivateKeyring.freshStore("placeholders")
            let previous = #"{"data":{"title":"plain"},"schema":"Note","version":1}"#
            var refused = 0
            for (index, text) in Self.placeholderRecords.enumerated() {
                for key in ["new-\(index)", "replaced-\(index)"] {
                    if key.hasPrefix("replaced") { try store.setData(Data(previous.utf8), forKey: key) }
                    do {
                        try store.setData(Data(text.utf8), forKey: key)
                        #expect(try store.data(forKey: key) == Data(text.utf8))
                    } catch {
                        refused += 1
                        // Refused up front (a placeholder it knows), or caught when read back.
                        #expect([.valueRefused, .verificationFailed].contains(error.code) && error.key == key)
                        #expect(error.message.contains("the provider, KeePassXC"), "\(error.message)")
                        #expect(error.message.contains("nothing was written") || error.code == .verificationFailed)
                        #expect(try store.data(forKey: key) == (key.hasPrefix("new") ? nil : Data(previous.utf8)))
                    }
                }
            }
            // Every one of these records holds a placeholder KeePassXC expands.
            #expect(refused == 2 * Self.placeholderRecords.count, "refused \(refused)")
        }

        @Test("a replaced record that reads back altered is undone: the previous record is put back")
        func alteredReplaceRestores() throws {
            var store = try PrivateKeyring.freshStore("altered-replace")
            let previous = #"{"data":{"title":"plain"},"schema":"Note","version":1}"#
            try store.setData(Data(previous.utf8), forKey: "note")
            store.readBackTransform = Self.expandTitle

            let next = #"{"data":{"title":"@TITLE@"},"schema":"Note","version":1}"#
            let error = try #require(throws: KeepsakeError.self) {
                try store.setData(Data(next.utf8), forKey: "note")
            }
            #expect(error.code == .verificationFailed)
            #expect(error.store == store.uri)
            #expect(error.key == "note")
            let expected = PrivateKeyring.expectedProvider
            #expect(error.message.contains("the provider, \(expected.kind.rawValue)"), "\(error.message)")
            #expect(error.message.contains("(\(expected.process), pid "), "\(error.message)")
            #expect(error.message.contains("different secret"))
            #expect(error.message.contains("first difference at byte 18"))
            #expect(error.message.contains("the previous record was put back"))
            #expect(try store.data(forKey: "note") == Data(previous.utf8))
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "note") == previous)
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).count == 1)

            // A record the transform leaves alone is written and kept.
            let plain = #"{"data":{"title":"other"},"schema":"Note","version":1}"#
            try store.setData(Data(plain.utf8), forKey: "note")
            #expect(try store.data(forKey: "note") == Data(plain.utf8))
        }

        @Test("a new record that reads back altered is undone: the new item is deleted")
        func alteredCreateDeletes() throws {
            var store = try PrivateKeyring.freshStore("altered-create")
            store.readBackTransform = Self.expandTitle
            let error = try #require(throws: KeepsakeError.self) {
                try store.setData(Data(#"{"title":"@TITLE@"}"#.utf8), forKey: "fresh")
            }
            #expect(error.code == .verificationFailed)
            #expect(error.store == store.uri && error.key == "fresh")
            #expect(error.message.contains("the new item was deleted"))
            #expect(try store.data(forKey: "fresh") == nil)
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).isEmpty)
        }

        @Test("in a batch, an altered write is failed and undone; the writes around it are applied")
        func alteredInBatch() throws {
            var store = try PrivateKeyring.freshStore("altered-batch")
            store.readBackTransform = Self.expandTitle
            let results = try store.commit([
                StoreWrite(key: "a", value: Data("first".utf8)),
                StoreWrite(key: "b", value: Data("@TITLE@".utf8)),
                StoreWrite(key: "c", value: Data("third".utf8))
            ])
            #expect(results.count == 3)
            #expect(results[0] == .applied && results[2] == .applied)
            guard case let .failed(error) = results[1] else {
                Issue.record("the altered write must fail, got \(results[1])")
                return
            }
            #expect(error.code == .verificationFailed && error.key == "b")
            #expect(try store.keys() == ["a", "c"])
            #expect(try store.data(forKey: "c") == Data("third".utf8))
        }

        @Test("an answer without the secret of an unlocked item is asked again once, then read")
        func missingSecretAskedAgain() throws {
            var store = try PrivateKeyring.freshStore("missing-secret")
            let record = Data(#"{"data":{"alias":"Ada"},"schema":"Person","version":3}"#.utf8)
            try store.setData(record, forKey: "person")
            let dropped = Mutex<[String]>([])
            store.dropsSecretFromAnswer = { path in
                dropped.withLock { $0.append(path) }
                return true
            }
            #expect(try store.data(forKey: "person") == record)
            #expect(try store.allData().map(\.data) == [record])
            let paths = dropped.withLock { $0 }
            #expect(paths.count == 2, "one dropped answer per read, each asked again once: \(paths)")
            #expect(paths.allSatisfy { $0.hasPrefix("/org/freedesktop/secrets/collection/") })
        }

        @Test("a secret the session cannot decrypt is read again on a new session")
        func undecodableSecretReadOnNewSession() throws {
            var store = try PrivateKeyring.freshStore("undecodable")
            let record = Data(#"{"data":{"alias":"Ada"},"schema":"Person","version":3}"#.utf8)
            try store.setData(record, forKey: "person")
            let answers = Mutex(0)
            /// The first `bad` answers from now on are undecodable (a KWallet session with a
            /// mismatched key each), the later ones read.
            func mismatch(first bad: Int) {
                answers.withLock { $0 = 0 }
                store.undecodableSecret = { _ in
                    answers.withLock {
                        $0 += 1
                        return $0 <= bad
                    }
                }
            }
            mismatch(first: 1)
            #expect(try store.data(forKey: "person") == record)
            #expect(answers.withLock { $0 } == 2, "read once on the first session, once on the new one")

            // Two mismatched sessions in a row (about one stale call in 256 on KWallet): a third.
            mismatch(first: 2)
            #expect(try store.data(forKey: "person") == record)
            #expect(answers.withLock { $0 } == 3, "read on the first session and two new ones")

            // Undecodable on every new session too: a typed error naming the store and key once
            // the call has opened its last new session, and the item untouched.
            mismatch(first: .max)
            let error = try #require(throws: KeepsakeError.self) { try store.data(forKey: "person") }
            #expect(error.code == .io && error.key == "person" && error.store == store.uri)
            #expect(error.message.contains("could not be decrypted"), "\(error.message)")
            #expect(answers.withLock { $0 } == 5, "the first session and four new ones")
            store.undecodableSecret = nil
            #expect(try store.data(forKey: "person") == record)
        }

        @Test("a write run again on a new session fills the item a refused CreateItem left without a secret")
        func retriedWriteFillsEmptyItem() throws {
            var store = try PrivateKeyring.freshStore("empty-item")
            // What KWallet keeps when it refuses a CreateItem it could not decrypt: the item, with
            // the key's attributes and no secret.
            try PrivateKeyring.secretToolStore(
                label: "left by a refused CreateItem", attributes: [("service", store.service), ("username", "k")],
                secret: "")
            let insert = StoreWrite(key: "k", value: Data("mine".utf8), expectation: .unchanged(nil))
            // On a first run, an item is an item: the key is taken.
            #expect(try store.commit([insert]) == [.conflict])
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "k") == "")

            // Run again after a stale session, the empty item is the refused create's: filled.
            let answers = Mutex(0)
            store.undecodableSecret = { _ in
                answers.withLock {
                    $0 += 1
                    return $0 == 1
                }
            }
            #expect(try store.commit([insert]) == [.applied])
            #expect(answers.withLock { $0 } == 2)
            store.undecodableSecret = nil
            #expect(try store.data(forKey: "k") == Data("mine".utf8))
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "k") == "mine")
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).count == 1, "one item, filled in place")
        }
    }
}
