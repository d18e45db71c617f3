import Foundation
import Keepsake

/// Every version of a chain as its records are stored — number, type, oldest reader, keys,
/// `RecordShape` (with every enum's cases) and date encoding — committed as a JSON file beside the app's models, so that a test fails
/// when a released version changes.
///
/// A released version is frozen: its records are on users' disks, and the version type is how
/// they are read. Editing one (adding, removing, renaming or retyping a field, making one
/// optional or required) compiles and passes tests written against the new code, and breaks
/// every record of that version in the field. `check(_:file:)` compares the chain with the
/// snapshot a previous run committed:
///
/// ```swift
/// @Test("no released Settings version has changed shape")
/// func settingsSchema() throws {
///     let file = URL(fileURLWithPath: #filePath)
///         .deletingLastPathComponent().appendingPathComponent("../../Schemas/Settings.json").standardized
///     let report = try SchemaSnapshot.check(Settings.chain, file: file)
///     #expect(report.checked.contains(0))
/// }
/// ```
///
/// A version in the chain but not yet in the file is new: the check writes it into the file and
/// passes, and the developer commits the file with the version. A missing file is written whole
/// on a developer's machine, with a note in the report to commit it; where the `CI` environment
/// variable is set, a missing file fails instead, so that a snapshot nobody committed never
/// passes unnoticed. ``RecordMode`` says what a check may write, given as `record:` or in the
/// `KEEPSAKE_RECORD_SNAPSHOTS` environment variable (``RecordMode/variable``).
///
/// - Important: A failure means a released version's stored shape changed, a released version
///   left the chain, or two versions could match one record stored without a version. Never
///   edit a released version; add a new one (`PersonV4` with `Predecessor = PersonV3`) and
///   migrate to it. Only a version that never shipped may be changed: delete its entry from the
///   snapshot file, and the next run records it anew.
///
/// The file is pretty-printed JSON with sorted keys and a trailing newline, so that it diffs
/// well:
///
/// ```json
/// {
///   "chain" : "Person",
///   "versions" : [
///     {
///       "keys" : [ "age", "name" ],
///       "oldestReader" : 0,
///       "optionalKeys" : [ ],
///       "shape" : {
///         "age" : { "required" : true, "type" : "string" },
///         "name" : { "required" : true, "type" : "string" }
///       },
///       "type" : "PersonV0",
///       "version" : 0
///     },
///     …
/// ```
public struct SchemaSnapshot: Codable, Sendable, Hashable {
    /// The chain's name (stored in every envelope as `schema`).
    public var chain: String
    /// Every version, oldest first.
    public var versions: [Version]

    /// One version of the chain as it is stored.
    public struct Version: Codable, Sendable, Hashable {
        /// The version number.
        public var version: Int
        /// The version type's name (`PersonV1`). Renaming the type changes no record: the check
        /// passes, and record mode `refine` updates it.
        public var type: String
        /// The oldest version whose readers can read this version's records (`ModelVersion.oldestReader`).
        public var oldestReader: Int
        /// The keys every record has, sorted; `nil` when they cannot be known.
        public var keys: [String]?
        /// The keys some records have, sorted; `nil` when they cannot be known.
        public var optionalKeys: [String]?
        /// The records' JSON shape; `nil` when it cannot be read off the type's `Decodable`
        /// conformance (then only its keys are checked).
        public var shape: RecordShape?
        /// How the version's dates are stored (`ModelVersion.dateEncoding`, as its description:
        /// `secondsSince1970`, `formatted(yyyy-MM-dd)`); `nil` for the default, `deferredToDate`,
        /// which the file then leaves out.
        public var dateEncoding: String?

        /// A version as a snapshot holds it.
        public init(
            version: Int, type: String, oldestReader: Int, keys: [String]?, optionalKeys: [String]?,
            shape: RecordShape?, dateEncoding: String? = nil
        ) {
            self.version = version
            self.type = type
            self.oldestReader = oldestReader
            self.keys = keys
            self.optionalKeys = optionalKeys
            self.shape = shape
            self.dateEncoding = dateEncoding
        }
    }

    /// A snapshot with these versions.
    public init(chain: String, versions: [Version]) {
        self.chain = chain
        self.versions = versions
    }

    /// The snapshot of `chain` as it is now.
    public init(_ chain: AnyModelChain) {
        let shapes = chain.shapes
        self.init(
            chain: chain.name,
            versions: chain.versions.map { summary in
                Version(
                    version: summary.version, type: summary.typeName, oldestReader: summary.oldestReader,
                    keys: summary.storedKeys.map { $0.required.sorted() },
                    optionalKeys: summary.storedKeys.map { $0.optional.sorted() },
                    shape: shapes[summary.version],
                    dateEncoding: summary.dateEncoding == .deferredToDate ? nil : summary.dateEncoding.description)
            })
    }

    /// The snapshot of `chain` as it is now.
    public init<Latest>(_ chain: ModelChain<Latest>) {
        self.init(chain.erased)
    }

    /// The file's bytes: pretty-printed JSON, sorted keys, a trailing newline.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }

    /// Writes ``encoded()`` to `file`, creating its folder if needed.
    public func write(to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try encoded().write(to: file, options: .atomic)
    }

    /// What a passing `check(_:file:)` did.
    public struct Report: Sendable, Hashable, CustomStringConvertible {
        /// The chain's name.
        public let chain: String
        /// The versions compared with the file (the released ones), oldest first.
        public let checked: [Int]
        /// The versions written into the file because it did not have them yet (new ones),
        /// oldest first. Commit the file with them.
        public let recorded: [Int]
        /// Whether the file did not exist and was written.
        public let createdFile: Bool
        /// Anything else worth knowing: a file written, a type renamed, a shape the probe can
        /// now read further than when it was recorded.
        public let notes: [String]

        /// A report of a check.
        public init(chain: String, checked: [Int], recorded: [Int], createdFile: Bool, notes: [String]) {
            self.chain = chain
            self.checked = checked
            self.recorded = recorded
            self.createdFile = createdFile
            self.notes = notes
        }

        public var description: String {
            var parts = [
                "\(chain): checked \(checked.isEmpty ? "none" : checked.map(String.init).joined(separator: ", "))"
            ]
            if !recorded.isEmpty { parts.append("recorded \(recorded.map(String.init).joined(separator: ", "))") }
            return (parts + notes).joined(separator: "; ")
        }
    }

    /// Checks `chain` against the snapshot in `file`, and records what is new in it as `record`
    /// allows.
    ///
    /// Each version in the file must still be in the chain, with the same keys, each key as
    /// required or optional as it was, each value of the same JSON type (recursively through
    /// nested objects, arrays and maps), every enum with the same cases (raw values, or keys
    /// and payload shapes), the same oldest reader and the same date encoding; no two versions of the chain
    /// may match one record stored without a version. Versions the file does not have are
    /// written into it, and a missing file is written whole, when `record` allows it (see
    /// ``RecordMode``); otherwise they fail the check. The file is written only when the check
    /// passes and its bytes change.
    ///
    /// ```swift
    /// try SchemaSnapshot.check(Settings.chain, file: file)                   // the default: see RecordMode
    /// try SchemaSnapshot.check(Settings.chain, file: file, record: .never)   // write nothing, ever
    /// ```
    ///
    /// - Parameters:
    ///   - chain: The chain as the code has it now.
    ///   - file: The committed snapshot file.
    ///   - record: What the check may write; `nil` (the default) takes
    ///     ``RecordMode/fromEnvironment(_:)``: `KEEPSAKE_RECORD_SNAPSHOTS` if set, else
    ///     ``RecordMode/newVersions`` where `CI` is set and ``RecordMode/missing`` elsewhere.
    /// - Important: A failure means a released version changed, or a snapshot that should have
    ///   been committed is not. Never edit a released version; add a new one. See ``SchemaSnapshot``.
    /// - Returns: Which versions were checked and which recorded.
    /// - Throws: ``SchemaSnapshotError`` naming the chain, each version and key that changed, or
    ///   the missing file or versions `record` did not allow writing;
    ///   ``RecordMode/UnknownModeError`` when `KEEPSAKE_RECORD_SNAPSHOTS` names no mode; or the
    ///   error of reading or writing the file.
    @discardableResult
    public static func check(_ chain: AnyModelChain, file: URL, record: RecordMode? = nil) throws -> Report {
        let record = try record ?? RecordMode.fromEnvironment()
        let current = SchemaSnapshot(chain)
        var changes = ChainValidation.indistinguishableBareVersions(chain).map { first, second in
            SchemaSnapshotError.Change(
                kind: .ambiguous, version: second, typeName: current.typeName(of: second),
                key: nil,
                reason: """
                    versions \(first) (\(current.typeName(of: first) ?? "?")) and \(second) \
                    (\(current.typeName(of: second) ?? "?")) could both match one record stored without a version; \
                    give one a required key the other cannot have, declare `storedWithoutVersion = false` in one that \
                    was only ever stored with its version, or declare the earlier one's readers compatible (oldestReader)
                    """)
        }
        let unreadableShapes =
            current.versions.filter { $0.shape == nil }.map { version in
                "version \(version.version)'s shape cannot be read off \(version.type)'s Decodable conformance; "
                    + "only its keys are checked"
            }
            + current.versions.flatMap { version in
                (version.shape.map(undeclaredEnums(in:)) ?? []).map { path in
                    """
                    version \(version.version) (\(version.type)), key '\(path)': an enum whose cases are not declared, \
                    so they are not frozen; make it CaseIterable or DeclaredCases
                    """
                }
            }
        let fileName = file.lastPathComponent
        if record == .all {
            guard changes.isEmpty else {
                throw SchemaSnapshotError(chain: chain.name, file: fileName, changes: changes)
            }
            let existed = FileManager.default.fileExists(atPath: file.path)
            try current.write(to: file)
            return Report(
                chain: chain.name, checked: [], recorded: current.versions.map(\.version), createdFile: !existed,
                notes: unreadableShapes + [
                    "\(fileName) was rewritten from the chain without checking it (record: all); review its diff before committing"
                ])
        }
        guard FileManager.default.fileExists(atPath: file.path) else {
            if !record.writesMissingFile {
                changes.append(
                    .init(
                        kind: .notRecorded, version: nil, typeName: nil, key: nil,
                        reason: """
                            the snapshot file is missing and \(record.reason) does not write one; run the check where \
                            it may (KEEPSAKE_RECORD_SNAPSHOTS=missing) and commit \(fileName)
                            """))
            }
            guard changes.isEmpty else {
                throw SchemaSnapshotError(chain: chain.name, file: fileName, changes: changes)
            }
            try current.write(to: file)
            return Report(
                chain: chain.name, checked: [], recorded: current.versions.map(\.version), createdFile: true,
                notes: unreadableShapes + ["\(fileName) did not exist and was written; commit it"])
        }
        let bytes = try Data(contentsOf: file)
        let stored: SchemaSnapshot
        do {
            stored = try JSONDecoder().decode(SchemaSnapshot.self, from: bytes)
        } catch {
            changes.append(
                .init(
                    kind: .unreadable, version: nil, typeName: nil, key: nil,
                    reason: "\(fileName) is not a schema snapshot (\(error)); restore it from version control"))
            throw SchemaSnapshotError(chain: chain.name, file: fileName, changes: changes)
        }
        if stored.chain != chain.name {
            changes.append(
                .init(
                    kind: .chainRenamed, version: nil, typeName: nil, key: nil,
                    reason: """
                        the snapshot is of chain '\(stored.chain)'; a chain's name is stored in every envelope, so renaming \
                        it orphans every record (or this is another chain's file)
                        """))
        }
        // Refinements of versions already in the file, which change no stored record: written
        // only in record mode `refine`.
        var refinements: [String] = []
        for old in stored.versions {
            guard let new = current.versions.first(where: { $0.version == old.version }) else {
                changes.append(
                    .init(
                        kind: .versionRemoved, version: old.version, typeName: old.type, key: nil,
                        reason: """
                            the version is in the snapshot but no longer in the chain, so its records can no longer be read
                            """))
                continue
            }
            changes += differences(from: old, to: new)
            if old.type != new.type {
                refinements.append("version \(old.version) is now \(new.type) (was \(old.type))")
            }
            if let oldShape = old.shape, let newShape = new.shape, oldShape != newShape {
                refinements.append("version \(old.version)'s shape is read further than when it was recorded")
            } else if old.shape == nil, new.shape != nil {
                refinements.append("version \(old.version)'s shape can now be read off its Decodable conformance")
            }
        }
        let storedVersions = Set(stored.versions.map(\.version))
        let recorded = current.versions.map(\.version).filter { !storedVersions.contains($0) }
        if !record.writesNewVersions {
            for version in recorded {
                changes.append(
                    .init(
                        kind: .notRecorded, version: version, typeName: current.typeName(of: version), key: nil,
                        reason: """
                            the version is in the chain but not in the snapshot, and \(record.reason) does not write it; \
                            record it (KEEPSAKE_RECORD_SNAPSHOTS=missing) and commit \(fileName)
                            """))
            }
        }
        let stale = refinements.joined(separator: "; ")
        if !refinements.isEmpty, changes.isEmpty, record != .refine, record != .missing {
            // Where a snapshot nobody refined must not pass (CI): say what is stale and how to refine it.
            changes.append(
                .init(
                    kind: .stale, version: nil, typeName: nil, key: nil,
                    reason: """
                        the snapshot is out of date for versions already in it, in ways that change no stored record \
                        (\(stale)); refine it where it may be written (KEEPSAKE_RECORD_SNAPSHOTS=refine) and commit \
                        \(fileName)
                        """))
        }
        guard changes.isEmpty else { throw SchemaSnapshotError(chain: chain.name, file: fileName, changes: changes) }
        var notes = unreadableShapes
        // The file as it is with the chain's new versions added; when refining, the chain as it is now.
        var updated = stored
        if record == .refine {
            updated = current
        } else {
            updated.versions += current.versions.filter { !storedVersions.contains($0.version) }
            updated.versions.sort { $0.version < $1.version }
            if !refinements.isEmpty {
                notes.append(
                    """
                    \(fileName) is out of date for versions already in it (\(stale)) and was left as it is; refine \
                    it with KEEPSAKE_RECORD_SNAPSHOTS=refine and commit it (where CI is set, this fails)
                    """)
            }
        }
        if updated != stored {
            try updated.write(to: file)
            notes.append(
                record == .refine && !refinements.isEmpty
                    ? "\(fileName) was refined (\(stale)); review its diff and commit it"
                    : "\(fileName) was updated with the new versions; commit it")
        }
        return Report(
            chain: chain.name, checked: stored.versions.map(\.version).sorted(), recorded: recorded,
            createdFile: false, notes: notes)
    }

    /// Checks `chain` against the snapshot in `file`, and records what is new in it as `record`
    /// allows: see `check(_:file:record:)`.
    ///
    /// - Important: A failure means a released version changed, or a snapshot that should have
    ///   been committed is not. Never edit a released version; add a new one.
    @discardableResult
    public static func check<Latest>(_ chain: ModelChain<Latest>, file: URL, record: RecordMode? = nil) throws
        -> Report
    {
        try check(chain.erased, file: file, record: record)
    }

    /// The paths of the enums in `shape` whose cases are not declared.
    private static func undeclaredEnums(in shape: RecordShape) -> [String] {
        var found: [String] = []
        var pending: [(RecordShape.Value, String)] = shape.fields.map { ($0.value.type, $0.key) }
        while let (value, path) = pending.popLast() {
            switch value {
            case .rawEnum(_, nil), .taggedEnum(nil): found.append(path)
            case let .taggedEnum(cases?): pending += cases.map { ($0.value, "\(path)(\($0.key))") }
            case let .array(element): pending.append((element, path + "[]"))
            case let .map(element): pending.append((element, path + "[*]"))
            case let .nullable(inner): pending.append((inner, path))
            case let .object(inner): pending += inner.fields.map { ($0.value.type, "\(path).\($0.key)") }
            default: break
            }
        }
        return found.sorted()
    }

    private func typeName(of version: Int) -> String? {
        versions.first { $0.version == version }?.type
    }

    // MARK: Comparing versions

    /// What changed in a released version, `old` as the file has it and `new` as the chain has it.
    private static func differences(from old: Version, to new: Version) -> [SchemaSnapshotError.Change] {
        var found: [(key: String?, reason: String)] = []
        if let oldShape = old.shape {
            if let newShape = new.shape {
                found += fieldDifferences(oldShape.fields, newShape.fields, path: "")
            } else {
                found.append((nil, "its shape can no longer be read off its Decodable conformance (was \(oldShape))"))
            }
        }
        // The keys, where the shapes did not already say so (declared keys, or no shape).
        if let oldRequired = old.keys, let oldOptional = old.optionalKeys,
            let newRequired = new.keys, let newOptional = new.optionalKeys
        {
            let mentioned = Set(found.compactMap { $0.key.map { String($0.prefix { $0 != "." && $0 != "[" }) } })
            func presence(_ key: String, _ required: [String], _ optional: [String]) -> String? {
                required.contains(key) ? "required" : optional.contains(key) ? "optional" : nil
            }
            for key in Set(oldRequired + oldOptional + newRequired + newOptional).sorted()
            where !mentioned.contains(key) {
                let was = presence(key, oldRequired, oldOptional), now = presence(key, newRequired, newOptional)
                switch (was, now) {
                case let (was?, nil): found.append((key, "removed (was: \(was))"))
                case let (nil, now?): found.append((key, "added (now: \(now))"))
                case let (was?, now?) where was != now: found.append((key, "made \(now) (was \(was))"))
                default: break
                }
            }
        }
        if old.dateEncoding != new.dateEncoding {
            let was = old.dateEncoding ?? DateEncoding.deferredToDate.description
            let now = new.dateEncoding ?? DateEncoding.deferredToDate.description
            found.append((nil, "its date encoding changed from \(was) to \(now), so its stored dates would be misread"))
        }
        if old.oldestReader != new.oldestReader {
            found.append((nil, "its oldestReader changed from \(old.oldestReader) to \(new.oldestReader)"))
        }
        return found.map {
            SchemaSnapshotError.Change(
                kind: .shapeChanged, version: old.version, typeName: new.type, key: $0.key,
                reason: $0.reason)
        }
    }

    private static func fieldDifferences(
        _ old: [String: RecordShape.Field], _ new: [String: RecordShape.Field], path: String
    ) -> [(key: String?, reason: String)] {
        var found: [(key: String?, reason: String)] = []
        for key in Set(old.keys).union(new.keys).sorted() {
            let keyPath = path.isEmpty ? key : path + "." + key
            switch (old[key], new[key]) {
            case let (was?, nil):
                found.append((keyPath, "removed (was: \(was))"))
            case let (nil, now?):
                found.append((keyPath, "added (now: \(now))"))
            case let (was?, now?):
                if was.required != now.required {
                    found.append(
                        (keyPath, now.required ? "made required (was optional)" : "made optional (was required)"))
                }
                found += valueDifferences(was.type, now.type, path: keyPath)
            case (nil, nil):
                break
            }
        }
        return found
    }

    /// What changed among an enum's cases: each removed, added or renamed case, and each case
    /// whose payload changed (at `path(case)`).
    private static func caseDifferences(
        _ old: [String: RecordShape.Value], _ new: [String: RecordShape.Value], path: String
    ) -> [(key: String?, reason: String)] {
        let removed = old.keys.filter { new[$0] == nil }.sorted()
        let added = new.keys.filter { old[$0] == nil }.sorted()
        var found: [(key: String?, reason: String)] = []
        if removed.count == 1, added.count == 1 {
            found.append((path, "case '\(removed[0])' renamed to '\(added[0])' (or removed and another added)"))
        } else {
            found += removed.map { (path, "case '\($0)' removed") }
            found += added.map { (path, "case '\($0)' added") }
        }
        for key in old.keys.sorted() {
            guard let was = old[key], let now = new[key] else { continue }
            found += valueDifferences(was, now, path: "\(path)(\(key))").map { change in
                (change.key, "case '\(key)': \(change.reason)")
            }
        }
        return found
    }

    private static func valueDifferences(
        _ old: RecordShape.Value, _ new: RecordShape.Value, path: String
    ) -> [(key: String?, reason: String)] {
        // An unknown recorded before matches anything: the probe reads further now.
        if old == new || old == .unknown { return [] }
        switch (old, new) {
        // Recorded before enums' cases were: the raw type, or cases not declared, then.
        case let (.string, .rawEnum(raw, _)), let (.integer, .rawEnum(raw, _)), let (.number, .rawEnum(raw, _)):
            if raw == old { return [] }
        case let (.rawEnum(was, nil), .rawEnum(now, _)) where was == now: return []
        case (.taggedEnum(nil), .taggedEnum): return []
        case let (.rawEnum(was, wasValues?), .rawEnum(now, nowValues)) where was == now:
            guard let nowValues else {
                return [(path, "its cases are no longer declared (were \(wasValues.joined(separator: ", ")))")]
            }
            return caseDifferences(
                Dictionary(uniqueKeysWithValues: wasValues.map { ($0, RecordShape.Value.unknown) }),
                Dictionary(uniqueKeysWithValues: nowValues.map { ($0, RecordShape.Value.unknown) }), path: path)
        case let (.taggedEnum(wasCases?), .taggedEnum(nowCases)):
            guard let nowCases else {
                return [
                    (path, "its cases are no longer declared (were \(wasCases.keys.sorted().joined(separator: ", ")))")
                ]
            }
            return caseDifferences(wasCases, nowCases, path: path)
        default: break
        }
        switch (old, new) {
        case let (.object(was), .object(now)): return fieldDifferences(was.fields, now.fields, path: path)
        case let (.array(was), .array(now)): return valueDifferences(was, now, path: path + "[]")
        case let (.map(was), .map(now)): return valueDifferences(was, now, path: path + "[*]")
        case let (.nullable(was), .nullable(now)): return valueDifferences(was, now, path: path)
        default: return [(path, "type changed from \(old) to \(new)")]
        }
    }
}

extension SchemaSnapshot {
    /// What `check(_:file:record:)` may write into a snapshot file.
    ///
    /// A check always compares the released versions the file holds; the mode only says what it
    /// does with what the file lacks. When no mode is given, ``fromEnvironment(_:)`` chooses:
    ///
    /// | environment | mode |
    /// |---|---|
    /// | `KEEPSAKE_RECORD_SNAPSHOTS=never`, `new-versions`, `missing` or `all` (`1` is `missing`) | that one |
    /// | `CI` set (and not `false` or `0`) | ``newVersions``: a missing file fails |
    /// | otherwise | ``missing``: a missing file is written, with a note to commit it |
    ///
    /// ```sh
    /// KEEPSAKE_RECORD_SNAPSHOTS=missing swift test --filter SchemaSnapshot   # record a new chain's file, even in CI
    /// KEEPSAKE_RECORD_SNAPSHOTS=never swift test                              # check only; write nothing
    /// ```
    public enum RecordMode: String, Sendable, Hashable, CaseIterable {
        /// Writes nothing: a missing file, or a version of the chain the file does not have,
        /// fails the check.
        case never
        /// Writes versions of the chain the file does not have (new ones) into it; a missing
        /// file fails the check. The default where the `CI` environment variable is set: a
        /// snapshot nobody committed never passes there.
        case newVersions = "new-versions"
        /// Writes versions the file does not have, and a missing file whole. The default on a
        /// developer's machine: the report's notes say to commit the file. A version already in
        /// the file is never rewritten: one whose entry is out of date in a way that changes no
        /// record (its type renamed, its shape read further once an enum declares its cases)
        /// passes with a note that says to refine the file.
        case missing
        /// What ``missing`` writes, and also refines the entries of versions already in the file
        /// in ways that change no stored record: a renamed type, a shape read further. Changes
        /// that do change records still fail. Review the file's diff before committing it.
        case refine
        /// Rewrites the whole file from the chain without comparing it: for re-recording
        /// versions that never shipped. Review the file's diff before committing it.
        ///
        /// - Important: This checks nothing but the chain itself (two versions one bare record
        ///   could match still fail). Never use it in CI.
        case all

        /// The environment variable that chooses the mode when `check` is given none:
        /// `KEEPSAKE_RECORD_SNAPSHOTS`.
        public static let variable = "KEEPSAKE_RECORD_SNAPSHOTS"

        /// The mode a check uses when it is given none: ``variable``'s value when it names a
        /// mode (`never`, `new-versions`, `missing`, `refine`, `all`; `1` or `true` for `missing`), else
        /// ``newVersions`` where `CI` is set to anything but `false` or `0`, else ``missing``.
        ///
        /// - Parameter environment: The environment to read; this process's by default.
        /// - Throws: ``UnknownModeError`` when ``variable`` names no mode: a misspelt mode must
        ///   not quietly record, or quietly not.
        public static func fromEnvironment(
            _ environment: [String: String] = ProcessInfo.processInfo.environment
        ) throws(UnknownModeError) -> RecordMode {
            if let value = environment[variable]?.lowercased(), !value.isEmpty {
                if value == "1" || value == "true" { return .missing }
                guard let mode = RecordMode(rawValue: value) else { throw UnknownModeError(value: value) }
                return mode
            }
            if let ci = environment["CI"]?.lowercased(), !ci.isEmpty, ci != "false", ci != "0" { return .newVersions }
            return .missing
        }

        /// ``variable`` set to a value that names no mode.
        public struct UnknownModeError: Error, Equatable, CustomStringConvertible {
            /// The value as set.
            public let value: String
            /// The error for `value`.
            public init(value: String) { self.value = value }
            public var description: String {
                "\(RecordMode.variable)=\(value) names no record mode; use one of "
                    + RecordMode.allCases.map(\.rawValue).joined(separator: ", ")
            }
        }

        var writesMissingFile: Bool { self == .missing || self == .refine || self == .all }
        var writesNewVersions: Bool { self != .never }

        /// How a failure names the mode.
        var reason: String { "record mode '\(rawValue)'" }
    }
}

/// Why `SchemaSnapshot.check(_:file:)` failed: the chain, the snapshot
/// file, and each version and key that changed.
///
/// - Important: Never edit a released version; add a new one.
public struct SchemaSnapshotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The chain's name.
    public let chain: String
    /// The snapshot file's name.
    public let file: String
    /// Everything that differs, by version.
    public let changes: [Change]

    /// One difference between the chain and its snapshot.
    public struct Change: Sendable, Hashable, CustomStringConvertible {
        /// What kind of difference.
        public enum Kind: Sendable, Hashable {
            /// A released version's keys, value types or oldest reader changed.
            case shapeChanged
            /// A version in the snapshot is no longer in the chain.
            case versionRemoved
            /// Two versions could match one record stored without a version.
            case ambiguous
            /// The snapshot is of a chain with another name.
            case chainRenamed
            /// The file is not a schema snapshot.
            case unreadable
            /// The file, or a version of the chain, is missing from the snapshot, and the
            /// ``SchemaSnapshot/RecordMode`` did not allow writing it.
            case notRecorded
            /// Versions already in the snapshot are recorded in a way that is out of date but
            /// changes no record (a renamed type, a shape read further), and the
            /// ``SchemaSnapshot/RecordMode`` (the one used where `CI` is set) does not refine them.
            case stale
        }

        /// What kind of difference it is.
        public let kind: Kind
        /// The version it is in, if any.
        public let version: Int?
        /// The version's type.
        public let typeName: String?
        /// The key it is in: a top-level key, or a path into nested values (`window.width`,
        /// `tags[]` for an array's elements, `scores[*]` for a map's values).
        public let key: String?
        /// What changed, for a person.
        public let reason: String

        /// A difference of `kind` in `version` (of type `typeName`), at `key`.
        public init(kind: Kind, version: Int?, typeName: String?, key: String?, reason: String) {
            self.kind = kind
            self.version = version
            self.typeName = typeName
            self.key = key
            self.reason = reason
        }

        public var description: String {
            var place: [String] = []
            if let version { place.append("version \(version)" + (typeName.map { " (\($0))" } ?? "")) }
            if let key { place.append("key '\(key)'") }
            return place.isEmpty ? reason : place.joined(separator: ", ") + ": " + reason
        }
    }

    public var description: String {
        var text =
            "Schema snapshot \(file) of chain '\(chain)' does not match the chain: "
            + changes.map(\.description).joined(separator: "; ") + "."
        if changes.contains(where: { $0.kind == .shapeChanged || $0.kind == .versionRemoved }) {
            text += """
                 A released version is frozen: its records are on users' disks and are read by its type as the \
                snapshot records it. Restore the version and make the change in a new version instead (a version \
                that never shipped may change: delete its entry from \(file) to record it anew).
                """
        }
        return text
    }
}
