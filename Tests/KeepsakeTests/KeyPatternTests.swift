import Foundation
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Testing

@testable import Keepsake

/// Person's versions as a model with many records: one fixed key and every `member-` key.
enum Member {
    static let chain = ModelChain<PersonV3>(name: "Member", defaultKeys: ["member-admin"], keyPatterns: ["member-*"])
}

@Suite("Key patterns: chains that own many keys")
struct KeyPatternTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

    static func bareV0(_ index: Int) -> Data {
        Data(#"{"name":"M\#(index)","age":"\#(index % 90)"}"#.utf8)
    }

    @Test("a pattern is a prefix and one final *; anything else is refused with the reason")
    func parsing() throws {
        #expect(try KeyPattern(parsing: "tenant-*").prefix == "tenant-")
        #expect(try KeyPattern(parsing: "*").prefix == "")
        let literal: KeyPattern = "user/*"
        #expect(literal.description == "user/*")
        #expect(literal.prefix == "user/")
        for text in ["tenant-", "ten*ant-*", "**", "", "a\u{0}*"] {
            #expect(throws: KeepsakeError.self) { try KeyPattern(parsing: text) }
        }
        do {
            _ = try KeyPattern(parsing: "tenant-")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("'tenant-' is not a key pattern"))
        }
        let pattern = KeyPattern(prefix: "caf\u{E9}-")
        #expect(pattern.matches("caf\u{E9}-1"))
        #expect(!pattern.matches("cafe\u{301}-1"))  // keys are compared by bytes
        #expect(KeyPattern(prefix: "a").overlaps(KeyPattern(prefix: "ab")))
        #expect(!KeyPattern(prefix: "ab").overlaps(KeyPattern(prefix: "ac")))
    }

    @Test("the upper bound of a prefix is the least string above every key it matches")
    func upperBounds() throws {
        #expect(KeyPattern(prefix: "tenant-").upperBound == "tenant.")
        #expect(KeyPattern(prefix: "a\u{10FFFF}").upperBound == "b")
        #expect(KeyPattern(prefix: "\u{D7FF}").upperBound == "\u{E000}")
        #expect(KeyPattern(prefix: "").upperBound == nil)
        #expect(KeyPattern(prefix: "\u{10FFFF}").upperBound == nil)
        // Every key that starts with the prefix sorts (by bytes) at or above it and below the bound.
        let pattern = KeyPattern(prefix: "t\u{FF}")
        let bound = try #require(pattern.upperBound)
        for key in ["t\u{FF}", "t\u{FF}\u{10FFFF}\u{10FFFF}", "t\u{FF}zz", "t\u{FF}\u{0}"] {
            #expect(key.utf8.lexicographicallyPrecedes(bound.utf8))
            #expect(!key.utf8.lexicographicallyPrecedes(pattern.prefix.utf8))
        }
        #expect(!"t\u{100}".utf8.lexicographicallyPrecedes(bound.utf8))
    }

    @Test(
        "a key goes to the caller's exact key, then the caller's longest pattern, then a fixed key, then a chain pattern"
    )
    func routingOrder() {
        let chains = [Person.chain.erased, Member.chain.erased, TrialInfo.chain.erased]
        let routing = KeyRouting(
            chains: chains, keyModels: ["member-9": "TrialInfo"],
            patternModels: [KeyPattern(prefix: "member-x"): "Person", KeyPattern(prefix: "member-xy"): "TrialInfo"])
        #expect(routing.chain(forKey: "member-9")?.name == "TrialInfo")
        #expect(routing.chain(forKey: "member-xa")?.name == "Person")
        #expect(routing.chain(forKey: "member-xyz")?.name == "TrialInfo")
        #expect(routing.chain(forKey: "member-1")?.name == "Member")
        #expect(routing.chain(forKey: "member-admin")?.name == "Member")
        #expect(routing.chain(forKey: "person")?.name == "Person")
        #expect(routing.chain(forKey: "members")?.name == nil)
    }

    @Test("chains whose patterns overlap, or that share a fixed key, are refused by name")
    func conflicts() throws {
        let tenants = ModelChain<PersonV3>(name: "Tenant", defaultKeys: [], keyPatterns: ["tenant-*"])
        let euTenants = ModelChain<PersonV3>(name: "EUTenant", defaultKeys: ["person"], keyPatterns: ["tenant-eu-*"])
        let found = AnyModelChain.conflicts(among: [tenants.erased, euTenants.erased, Person.chain.erased])
        #expect(found.count == 2)
        #expect(
            found.contains { $0.chain == "EUTenant" && $0.reason.contains("tenant-eu-* overlaps Tenant's tenant-*") })
        #expect(
            found.contains { $0.chain == "Person" && $0.reason.contains("'person' is also a default key of EUTenant") })
        #expect(throws: ChainError.self) { try ChainValidation.validate([tenants.erased, euTenants.erased]) }
        // A fixed key inside another chain's pattern is no conflict: the exact key wins.
        let admin = ModelChain<PersonV3>(name: "Admin", defaultKeys: ["tenant-admin"])
        #expect(AnyModelChain.conflicts(among: [tenants.erased, admin.erased]).isEmpty)
        try ChainValidation.validate([tenants.erased, admin.erased, Person.chain.erased, TrialInfo.chain.erased])
        // The ManyRecords article's example.
        try ChainValidation.validate([Person.chain.erased, Member.chain.erased, TrialInfo.chain.erased])
    }

    @Test("the ManyRecords article's walk collects every member's name and each damaged record's error")
    func articleWalk() async throws {
        let store = InMemoryStore(
            name: "article",
            contents: [
                "member-1": Self.bareV0(1), "member-2": Data(#"{"name":2}"#.utf8), "member-admin": Self.bareV0(0)
            ])
        let vault = Vault(store: store, context: context)
        var names: [String] = []
        var failures: [KeepsakeError] = []
        for try await record in vault.records(of: Member.chain) {
            switch record.result {
            case let .success(member): names.append(member.value.alias)
            case let .failure(error): failures.append(error)
            }
        }
        #expect(names == ["M0", "M1"])
        #expect(failures.map(\.key) == ["member-2"])
    }

    @Test("the migrator plans and migrates bare records by the pattern their key matches")
    func migratorByPattern() throws {
        var contents = Dictionary(uniqueKeysWithValues: (0..<40).map { ("member-\($0)", Self.bareV0($0)) })
        contents["other-1"] = Self.bareV0(1)
        contents["member-admin"] = Self.bareV0(99)
        let store = InMemoryStore(name: "members", contents: contents)
        let plain = Migrator(store: store, chains: [Person.chain.erased], context: context)
        #expect(try plain.plan().allSatisfy { $0.state == .unmanaged })
        let migrator = Migrator(store: store, chains: [Person.chain.erased, Member.chain.erased], context: context)
        let plan = try migrator.plan()
        #expect(plan.filter { $0.state == .outdated && $0.schema == "Member" }.count == 41)
        #expect(plan.first { $0.key == "other-1" }?.state == .unmanaged)
        // The caller's pattern reaches keys no chain claims.
        let mapped = Migrator(
            store: store, chains: [Person.chain.erased, Member.chain.erased], context: context,
            patternModels: [KeyPattern(prefix: "other-"): "Person"])
        let reports = try mapped.run()
        #expect(reports.filter { $0.state == .migrated }.count == 42)
        let migrated = try #require(try store.data(forKey: "member-7"))
        #expect(String(decoding: migrated, as: UTF8.self).contains(#""schema":"Member""#))
        let other = try #require(try store.data(forKey: "other-1"))
        #expect(String(decoding: other, as: UTF8.self).contains(#""schema":"Person""#))
    }

    /// Every record of `chain` walked through `vault.records(of:)`, on its own thread-free loop.
    static func walk(_ vault: Vault, pageSize: Int) async throws -> [ModelRecord<PersonV3>] {
        var seen: [ModelRecord<PersonV3>] = []
        for try await record in vault.records(of: Member.chain, pageSize: pageSize) { seen.append(record) }
        return seen
    }

    @Test(
        "records(of:) walks the fixed keys, then each pattern, in pages: each record once, in order, errors as elements",
        arguments: ["memory", "defaults"])
    func walkRecords(kind: String) async throws {
        var writes = (0..<1_000).map { StoreWrite(key: String(format: "member-%04d", $0), value: Self.bareV0($0)) }
        writes.append(StoreWrite(key: "member-admin", value: Self.bareV0(5_000)))
        writes.append(StoreWrite(key: "member-0500", value: Data(#"{"name":7}"#.utf8)))  // unreadable
        writes.append(
            StoreWrite(key: "member-0501", value: Data(#"{"data":{"x":1},"schema":"Member","version":9}"#.utf8)))
        writes.append(StoreWrite(key: "members", value: Self.bareV0(1)))  // another model's
        writes.append(StoreWrite(key: "memb", value: Self.bareV0(2)))
        let store: any RecordStore
        if kind == "memory" {
            store = InMemoryStore(name: "walk")
            _ = try store.commit(writes)
        } else {
            let suite = DefaultsStore(path: try temporaryDirectory() + "/suite.json")
            _ = try suite.commit(writes)
            store = suite
        }
        let vault = Vault(store: store, context: context)
        let keys = try await vault.keys(of: Member.chain)
        #expect(keys.count == 1_001)
        #expect(keys.first == "member-admin")
        #expect(Array(keys.dropFirst()) == (0..<1_000).map { String(format: "member-%04d", $0) })
        for pageSize in [1, 7, 256, 5_000] {
            let records = try await Self.walk(vault, pageSize: pageSize)
            #expect(records.map(\.key) == keys)
            let failures = records.filter { if case .failure = $0.result { true } else { false } }
            #expect(failures.map(\.key) == ["member-0500", "member-0501"])
            if case let .failure(error)? = failures.last?.result {
                #expect(error.code == .newerVersion)
                #expect(error.key == "member-0501")
                #expect(error.store == store.uri)
            }
            if case let .success(record)? = records.first(where: { $0.key == "member-0042" })?.result {
                #expect(record.wasMigrated)
                #expect(record.storedVersion == 0)
                #expect(record.value.alias == "M42")
            } else {
                Issue.record("member-0042 did not read")
            }
        }
        // Nothing was written.
        #expect(try store.data(forKey: "member-0042") == Self.bareV0(42))
    }

    @Test("a record removed during the walk is left out; a walk of a model with no records is empty")
    func removedDuringWalk() async throws {
        let store = InMemoryStore(
            name: "shrinking",
            contents: Dictionary(uniqueKeysWithValues: (0..<10).map { ("member-\($0)", Self.bareV0($0)) }))
        let vault = Vault(store: store, context: context)
        var iterator = vault.records(of: Member.chain, pageSize: 3).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.key == "member-0")
        try store.removeData(forKey: "member-5")
        var rest: [String] = []
        while let record = try await iterator.next() { rest.append(record.key) }
        #expect(
            rest == ["member-1", "member-2", "member-3", "member-4", "member-6", "member-7", "member-8", "member-9"])
        let empty = Vault(store: InMemoryStore(name: "empty"), context: context)
        var count = 0
        for try await _ in empty.records(of: Member.chain) { count += 1 }
        #expect(count == 0)
    }

    @Test("a store that cannot be read ends the walk with its error, naming the store")
    func storeFailureEndsWalk() async throws {
        let vault = Vault(store: Unreachable(), context: context)
        var thrown: KeepsakeError?
        do {
            for try await _ in vault.records(of: Member.chain) {}
        } catch {
            thrown = error
        }
        #expect(thrown?.code == .unavailable)
        #expect(thrown?.store == "test:unreachable")
    }

    /// A store whose server is gone: every call fails.
    struct Unreachable: RecordStore {
        var uri: String { "test:unreachable" }
        var capabilities: StoreCapabilities { [] }
        func data(forKey key: String) throws(KeepsakeError) -> Data? { throw gone }
        func keys() throws(KeepsakeError) -> [String] { throw gone }
        func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { throw gone }
        var gone: KeepsakeError { KeepsakeError(.unavailable, store: uri, "the server went away") }
    }
}
