/// A record a `Vault` load found: its value at the latest version, what was stored, and
/// whether a migrated record was written back.
public struct LoadedRecord<Model: Sendable>: Sendable {
    /// What happened to a migrated record's write-back.
    public enum WriteBack: Sendable, Equatable {
        /// The record was current: there was nothing to write.
        case notNeeded
        /// The migrated record replaced the stored one.
        case written
        /// The vault's options turned write-back off: the record stays as stored.
        case skipped
        /// Writing the migrated record failed; the stored bytes are as they were. The value is
        /// still the migrated one, and the next load migrates again.
        case failed(KeepsakeError)
    }

    /// The record as read and migrated in memory.
    public let record: DecodedRecord<Model>
    /// Whether the migrated record was written back.
    public let writeBack: WriteBack

    @usableFromInline
    init(record: DecodedRecord<Model>, writeBack: WriteBack) {
        self.record = record
        self.writeBack = writeBack
    }

    /// The record at the latest version.
    public var value: Model { record.value }
    /// The version it was stored at.
    public var storedVersion: Int { record.storedVersion }
    /// Whether it was stored at an older version and migrated.
    public var wasMigrated: Bool { record.wasMigrated }
}

extension LoadedRecord: Equatable where Model: Equatable {}
