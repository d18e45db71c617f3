import Foundation

/// What one probe of a version's `Decodable` conformance found (``ShapeProbe/record(_:)``):
/// its ``RecordShape``, its ``StoredKeys`` — declared, or the shape's top-level fields — and
/// whether it writes the keys it reads.
///
/// Made once per version of a chain, when first asked (`VersionEntry` keeps it), never per
/// record: a record's read only looks up the keys made here.
final class VersionProbe: Sendable {
    /// The stored JSON shape; `nil` when it cannot be read off the `Decodable` conformance.
    let shape: RecordShape?
    /// The stored keys, when known (declared, or the shape's top-level fields).
    let keys: StoredKeys?
    /// ``keys`` as bytes, for matching a stored record's member names.
    let keyTable: KeyTable?
    /// Why ``keys`` is unknown.
    let keyProblem: ProbeProblem?
    /// Whether the version writes exactly the keys it reads: asked only by validation, so that
    /// a version's `encode(to:)` runs on a placeholder only when a test asks.
    let roundTripProblem: @Sendable () -> ProbeProblem?

    init<V: ModelVersion>(_ type: V.Type) {
        let probed = ShapeProbe.record(V.self)
        let declared = V.storedKeys
        var sample: V?
        switch probed {
        case let .success(found):
            shape = found.shape
            sample = found.sample
            keys = declared.isInferred ? StoredKeys(found.shape) : declared
            keyProblem = nil
        case let .failure(problem):
            shape = nil
            // Declared keys of a type the probe cannot read: compare a built placeholder's.
            sample = declared.isInferred ? nil : try? ShapeProbe.placeholder(V.self)
            keys = declared.isInferred ? nil : declared
            keyProblem = declared.isInferred ? problem.unknownKeys(of: V.self) : nil
        }
        keyTable = keys.map(KeyTable.init)
        let known = keys
        let written = sample
        roundTripProblem = {
            guard let known, let written else { return nil }
            return Self.roundTripProblem(of: written, keys: known)
        }
    }

    /// Encodes `value` and compares the top-level keys written with `keys`, the keys read: a
    /// required key never written, or a written key never read, means records of this version
    /// would not read back (or not be recognised when stored bare).
    static func roundTripProblem<V: ModelVersion>(of value: V, keys: StoredKeys) -> ProbeProblem? {
        let written: [String]
        do {
            guard case let .object(object) = try JSONParser.parse(CanonicalJSON.encode(value, dates: V.dateEncoding))
            else {
                return ProbeProblem(field: nil, reason: "\(V.self) does not encode as a JSON object")
            }
            written = object.keys
        } catch {
            return ProbeProblem(field: nil, reason: "a placeholder \(V.self) could not be encoded (\(error))")
        }
        if let unread = written.first(where: { !keys.all.contains($0) }) {
            return ProbeProblem(
                field: unread,
                reason: """
                    \(V.self) writes the key '\(unread)' but does not read it (it reads \(keys)); check its \
                    CodingKeys and encode(to:)
                    """)
        }
        if let unwritten = keys.required.sorted().first(where: { !written.contains($0) }) {
            return ProbeProblem(
                field: unwritten,
                reason: """
                    \(V.self) requires the key '\(unwritten)' but does not write it, so what it stores cannot be \
                    read back; check its CodingKeys and encode(to:)
                    """)
        }
        return nil
    }
}
