internal import SodiumKit

/// The data keys a store's header holds, unwrapped: the name key that names record files, and
/// the data key of each generation with its record subkey.
///
/// A format-1 header holds one data key (generation 1), from which the name key and the record
/// key are both derived. A format-2 header (`docs/FORMAT.md` §6.1) holds the name key itself —
/// the one generation 1 derived, so a record file keeps its name through every rotation — and
/// the data keys of one or more generations; the newest, the primary, seals what is written.
struct KeySet: Sendable {
    struct Generation: Sendable {
        let number: UInt32
        let dataKey: SecureBytes
        let recordKey: SecureBytes

        init(number: UInt32, dataKey: SecureBytes) {
            self.number = number
            self.dataKey = dataKey
            self.recordKey = dataKey.subkey(id: Format.recordSubkeyID, context: Format.dataContext)
        }
    }

    /// The header's format version: 1 writes format-1 record files, 2 writes format 2.
    let formatVersion: UInt16
    let nameKey: SecureBytes
    /// Ascending by number; the last is the primary.
    let generations: [Generation]

    /// A format-1 store's single data key.
    init(formatOneDataKey dataKey: SecureBytes) {
        formatVersion = Format.version
        nameKey = dataKey.subkey(id: Format.nameSubkeyID, context: Format.dataContext)
        generations = [Generation(number: 1, dataKey: dataKey)]
    }

    /// A format-2 set; `generations` ascending and not empty.
    init(nameKey: SecureBytes, generations: [Generation]) {
        precondition(!generations.isEmpty, "a key set holds at least one generation")
        formatVersion = Format.rotatingVersion
        self.nameKey = nameKey
        self.generations = generations
    }

    var primary: Generation { generations[generations.count - 1] }

    /// The record key of `generation`, or `nil` when the set does not hold it.
    func recordKey(_ generation: UInt32) -> SecureBytes? {
        generations.first { $0.number == generation }?.recordKey
    }

    /// The keys a write uses: the primary's record key and the name key.
    var writing: DataSubkeys { DataSubkeys(recordKey: primary.recordKey, nameKey: nameKey) }

    /// What a written record file says of its key: nothing for format 1 (its generation is 1),
    /// the primary's number for format 2.
    var writtenGeneration: UInt32? { formatVersion == Format.version ? nil : primary.number }

    /// This set with a new primary generation (format 2).
    func adding(_ dataKey: SecureBytes) -> KeySet {
        KeySet(nameKey: nameKey, generations: generations + [Generation(number: primary.number &+ 1, dataKey: dataKey)])
    }

    /// This set holding the primary generation only (format 2).
    func primaryOnly() -> KeySet {
        KeySet(nameKey: nameKey, generations: [primary])
    }

    /// The wrapped plaintext of a format-2 header: name key ‖ (generation u32 LE ‖ data key)….
    func plaintext() -> SecureBytes {
        let size = Format.keyBytes + generations.count * (4 + Format.keyBytes)
        return SecureBytes(count: size) { (buffer: UnsafeMutableRawBufferPointer) in
            nameKey.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Format.keyBytes]).copyMemory(from: $0)
            }
            var offset = Format.keyBytes
            for generation in generations {
                var number = generation.number.littleEndian
                withUnsafeBytes(of: &number) {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + 4)]).copyMemory(from: $0)
                }
                offset += 4
                generation.dataKey.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + Format.keyBytes)]).copyMemory(
                        from: $0)
                }
                offset += Format.keyBytes
            }
        }
    }

    /// The set in the wrapped plaintext of a format-2 header holding `count` generations, the
    /// last of them `primary`; a failure when the numbers are not strictly ascending.
    static func parse(_ plain: SecureBytes, count: Int, primary: UInt32) throws(FormatFailure) -> KeySet {
        guard plain.count == Format.keyBytes + count * (4 + Format.keyBytes) else {
            throw .corrupt("the header's key set is \(plain.count) bytes long, not what \(count) keys take")
        }
        let nameKey = plain.extracting(0..<Format.keyBytes)
        var generations: [Generation] = []
        var offset = Format.keyBytes
        for _ in 0..<count {
            var number: UInt32 = 0
            plain.withUnsafeBytes { bytes in
                withUnsafeMutableBytes(of: &number) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 4)]))
                }
            }
            number = UInt32(littleEndian: number)
            offset += 4
            let key = plain.extracting(offset..<(offset + Format.keyBytes))
            offset += Format.keyBytes
            if let last = generations.last, number <= last.number {
                throw .corrupt("the header's data key generations are not in ascending order")
            }
            generations.append(Generation(number: number, dataKey: key))
        }
        guard generations.last?.number == primary else {
            throw .corrupt("the header's primary data key generation \(primary) is not its newest")
        }
        return KeySet(nameKey: nameKey, generations: generations)
    }
}
