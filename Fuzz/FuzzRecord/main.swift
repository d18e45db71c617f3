// libFuzzer target: arbitrary bytes through the one record pipeline, on both sample chains.
// Any input must end in a result or a KeepsakeError — never a crash, trap or sanitizer report.
import Foundation
import FuzzSupport
import Keepsake
import Migrations

private let context = MigrationContext(
    clock: { Date(timeIntervalSince1970: 1_700_000_000) },
    makeIdentifier: { "00000000-0000-0000-0000-000000000000" },
    deviceIdentity: "fuzz-device"
)
private let noDevice = MigrationContext(
    clock: { Date(timeIntervalSince1970: 1_700_000_000) },
    makeIdentifier: { "00000000-0000-0000-0000-000000000000" }
)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    _ = try? Person.chain.read(bytes, context: context)
    _ = try? TrialInfo.chain.read(bytes, context: context)
    _ = try? TrialInfo.chain.read(bytes, context: noDevice)
    // The writer's path too: encode and verify the latest envelope of an outdated record.
    writeBack(Person.chain, bytes)
    writeBack(TrialInfo.chain, bytes)
    return 0
}

/// What a write-back does with `bytes`: read them, and encode and verify the latest envelope of
/// an outdated record (an error is a result here; only a crash is a finding).
private func writeBack<Latest>(_ chain: ModelChain<Latest>, _ bytes: Data) {
    guard case let .outdated(record) = chain.outcome(of: bytes, context: context) else { return }
    do {
        _ = try chain.encode(record.value)
    } catch {
        return
    }
}

runLibFuzzer(fuzz)
