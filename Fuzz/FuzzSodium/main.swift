// libFuzzer target: arbitrary bytes as an encrypted store's header and record files. The
// first input byte picks what the rest becomes:
//   0  header bytes, checksum recomputed so the fuzzer reaches the fields behind it: parsed,
//      and written as the store's header and opened with the store's key file;
//   1  a record file's bytes, opened as the record "alpha" (authentication must refuse them);
//   2  a record plaintext, sealed with the store's real data key, so the fuzzer reaches the
//      parsing behind authentication (key length, UTF-8, name hash);
//   3  a record file's bytes written over "alpha" in the store, then read through the public
//      API (one record and the whole store).
// Each must end in a value or a typed error, never a trap; what succeeds must be consistent
// (a parsed header re-encodes to the same bytes, a store opened through an altered header
// reads the record it held). Every file the input replaced is restored before the next input.
import Foundation
import FuzzSupport
import Keepsake

@testable import KeepsakeSodium

private let directory = fuzzScratchPath("sodium")

/// The store, its one record, and the bytes and keys behind them — made once per process.
private struct Fixture {
    let store: SodiumFileStore
    let keyFile: String
    /// Made anew on each use: LeakSanitizer does not recognise a `Data` kept in a global as
    /// reachable (its storage pointer is held with tag bits).
    var value: Data { Self.value }
    static var value: Data { Data(#"{"schema":"Person","version":3,"data":{"name":"fuzz"}}"#.utf8) }
    let header: [UInt8]
    let parsedHeader: StoreHeader
    let masterKey: SecureBytes
    let dataKey: SecureBytes
    let subkeys: DataSubkeys
    let keySet: KeySet
    let recordPath: String
    let recordBytes: [UInt8]

    init() {
        keyFile = directory + ".key"
        do {
            store = try SodiumFileStore.create(directory: directory + "/store", key: .keyFile(path: keyFile))
            let results = try store.commit([StoreWrite(key: "alpha", value: Self.value)])
            precondition(results == [.applied], "the fixture record was not written")
            header = readFile(store.directory + "/" + Format.headerFileName)
            parsedHeader = try StoreHeader.parse(header)
            masterKey = try KeyFile(path: keyFile).masterKey(createIfAbsent: false)
            dataKey = try parsedHeader.unwrapDataKey(masterKey: masterKey)
        } catch {
            preconditionFailure("cannot set up the fuzz store: \(error)")
        }
        subkeys = DataSubkeys(dataKey: dataKey)
        keySet = KeySet(formatOneDataKey: dataKey)
        recordPath = store.directory + "/" + subkeys.fileName(of: "alpha")
        recordBytes = readFile(recordPath)
    }
}

private let fixture = Fixture()

private func readFile(_ path: String) -> [UInt8] {
    guard let bytes = readWholeFile(path) else { preconditionFailure("cannot open \(path)") }
    return bytes
}

private func writeFile(_ path: String, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { writeWholeFile(path, $0) }
}

/// Mode 0: header bytes. With enough bytes for the fields, the checksum is recomputed, so the
/// structural checks behind it are what the fuzzer meets: over the first 168 bytes for a
/// format-1 header, over all but the last 32 for one that says format 2 (whose size follows
/// its key count).
private func fuzzHeader(_ payload: [UInt8]) {
    let formatTwo = payload.count >= StoreHeader.size && payload[8] == 2 && payload[9] == 0
    let checked = formatTwo ? payload.count - 32 : StoreHeader.size - 32
    let bytes =
        payload.count >= checked
        ? Array(payload[0..<checked]) + blake2b256(Array(payload[0..<checked])) : payload
    let parsed: StoreHeader
    do {
        parsed = try StoreHeader.parse(bytes)
    } catch {
        return
    }
    precondition(parsed.encoded == bytes, "a parsed header does not re-encode to its bytes")
    if parsed.keyKind == .raw, let unwrapped = try? parsed.unwrapDataKey(masterKey: fixture.masterKey) {
        precondition(unwrapped == fixture.dataKey, "an altered header unwrapped another data key")
    }
    // Through the public API: a key file opens a raw-key header only; a passphrase header is
    // refused before any Argon2id work.
    let path = fixture.store.directory + "/" + Format.headerFileName
    writeFile(path, bytes)
    defer { writeFile(path, fixture.header) }
    do {
        let reopened = try SodiumFileStore(directory: fixture.store.directory, key: .keyFile(path: fixture.keyFile))
        precondition(parsed.keyKind == .raw, "a key file opened a passphrase header")
        precondition(
            parsed.storeID == fixture.parsedHeader.storeID || (try? reopened.data(forKey: "alpha")) == nil,
            "a store opened through a header with another store id read a record")
        if parsed.storeID == fixture.parsedHeader.storeID {
            precondition(
                (try? reopened.data(forKey: "alpha")) == fixture.value, "the reopened store misread its record")
        }
    } catch {
        precondition([.wrongKey, .corruptStore].contains(error.code), "an altered header gave \(error.code): \(error)")
    }
}

/// Mode 1: a record file's bytes, which authentication must refuse unless they are the real file.
private func fuzzRecordFile(_ payload: [UInt8]) {
    let nameHash = fixture.subkeys.nameHash(of: "alpha")
    if let opened = try? RecordFile.open(
        payload, nameHash: nameHash, storeID: fixture.parsedHeader.storeID,
        keys: fixture.keySet)
    {
        precondition(
            opened.recordKey == "alpha" && opened.value == fixture.value,
            "a forged record file opened as \(opened.recordKey)")
    }
}

/// Mode 2: a plaintext sealed with the real key, under the name its own key claims (when it
/// claims one that is valid UTF-8), so parsing behind authentication is reached.
private func fuzzPlaintext(_ payload: [UInt8]) {
    var claimed = "alpha"
    if payload.count >= 4 {
        let length = Int(payload[0]) | Int(payload[1]) << 8 | Int(payload[2]) << 16 | Int(payload[3]) << 24
        if length <= payload.count - 4, let key = String(validating: payload[4..<(4 + length)], as: UTF8.self) {
            claimed = key
        }
    }
    let nameHash = fixture.subkeys.nameHash(of: claimed)
    let nonce = [UInt8](repeating: 7, count: AEAD.nonceBytes)
    var file = ByteWriter()
    file.append(Format.recordMagic)
    file.append(Format.version)
    file.append(nonce)
    let associated = RecordFile.associatedData(storeID: fixture.parsedHeader.storeID, nameHash: nameHash)
    file.append(
        AEAD.seal(
            SecureBytes(copying: payload), associatedData: associated, nonce: nonce,
            key: fixture.subkeys.recordKey))
    do {
        let opened = try RecordFile.open(
            file.bytes, nameHash: nameHash, storeID: fixture.parsedHeader.storeID,
            keys: fixture.keySet)
        let keyBytes = Array(opened.recordKey.utf8)
        precondition(opened.recordKey == claimed && !keyBytes.isEmpty, "a record opened under another key")
        precondition(
            Array(payload[4...]) == keyBytes + Array(opened.value), "a record's key and value are not its plaintext")
    } catch {
        // Refused: an empty or out-of-range key, or one that is not UTF-8.
        precondition(claimed == "alpha" || claimed.isEmpty, "a well-formed plaintext was refused: \(error)")
    }
}

/// Whether `bytes` pass a record file's structural checks and carry a format-2 label naming
/// generation 0, older than the store's only one: what a store reports as a retired key
/// (`wrongKey`), not as damage.
private func namesRetiredKey(_ bytes: [UInt8]) -> Bool {
    bytes.count >= RecordFile.minimumSize + 4 && Array(bytes[0..<8]) == Format.recordMagic
        && bytes[8..<14] == [2, 0, 0, 0, 0, 0]
}

/// Mode 3: the bytes as the record file of "alpha", read through the store.
private func fuzzStoredRecord(_ payload: [UInt8]) {
    writeFile(fixture.recordPath, payload)
    defer { writeFile(fixture.recordPath, fixture.recordBytes) }
    let genuine = payload == fixture.recordBytes
    do {
        let value = try fixture.store.data(forKey: "alpha")
        precondition(genuine && value == fixture.value, "an altered record file was read")
    } catch {
        precondition(
            !genuine && error.code == (namesRetiredKey(payload) ? .wrongKey : .corruptRecord) && error.key == "alpha",
            "an altered record file gave \(error.code) for \(error.key ?? "no key")")
    }
    do {
        // A file that does not open cannot tell its key: it is listed under its file name.
        let records = try fixture.store.allRecords()
        let listed = genuine ? "alpha" : fixture.subkeys.fileName(of: "alpha")
        precondition(records.count == 1 && records[0].key == listed, "the store lists \(records.map(\.key))")
        switch records[0].result {
        case let .success(value): precondition(genuine && value == fixture.value, "an altered record file was listed")
        case let .failure(error):
            precondition(
                !genuine && error.code == (namesRetiredKey(payload) ? .wrongKey : .corruptRecord),
                "listing gave \(error.code)")
        }
    } catch {
        preconditionFailure("one damaged record failed the whole listing: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let payload = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0: fuzzHeader(payload)
    case 1: fuzzRecordFile(payload)
    case 2: fuzzPlaintext(payload)
    default: fuzzStoredRecord(payload)
    }
    return 0
}

// The fixture is made before the first input, so its setup is no input's work.
_ = fixture
runLibFuzzer(fuzz)
