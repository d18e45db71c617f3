import Foundation

/// The one way Keepsake writes JSON: UTF-8, keys sorted, no escaped slashes, dates in the
/// version's ``DateEncoding`` (by default ISO 8601 UTC with at least milliseconds), losslessly.
package enum CanonicalJSON {
    /// - Throws: `EncodingError.invalidValue` at the field's coding path for a date that
    ///   cannot be written exactly (outside the years 0001–9999, not finite), and what the
    ///   value's own `encode(to:)` throws.
    ///
    /// Written by Keepsake's own encoder (`CanonicalEncoder`), which writes the bytes
    /// ``foundationEncode(_:dates:)`` writes; a value holding a type it leaves to `JSONEncoder`
    /// (`Data`, `URL`, `Decimal`, 128-bit integers) is encoded by ``foundationEncode(_:dates:)``.
    package static func encode<T: Encodable>(_ value: T, dates: DateEncoding = .deferredToDate) throws -> Data {
        do {
            return try ownEncode(value, dates: dates)
        } catch is CanonicalEncoderUnsupported {
            return try foundationEncode(value, dates: dates)
        }
    }

    /// The bytes of the ``Envelope`` of these members holding `data`, as ``encode(_:)`` writes
    /// them, with the envelope's own members set directly, in the order
    /// ``EnvelopeMember/forEachWritten(oldestReader:_:)`` gives, rather than through a keyed
    /// container.
    static func encodeEnvelope<T: Encodable>(
        schema: String, version: Int, oldestReader: Int?, data: T, dates: DateEncoding = .deferredToDate
    ) throws -> Data {
        try encodeEnvelopeWithTree(
            schema: schema, version: version, oldestReader: oldestReader, data: data, dates: dates
        ).bytes
    }

    /// ``encodeEnvelope(schema:version:oldestReader:data:dates:)``, with the encoder's tree the
    /// bytes were written from — `nil` when `JSONEncoder` wrote them (a value holding a type
    /// Keepsake's encoder leaves to it). A write-back proves the bytes by decoding from the tree
    /// (`TreeDecoder<CanonicalNode>`) instead of parsing the bytes again.
    static func encodeEnvelopeWithTree<T: Encodable>(
        schema: String, version: Int, oldestReader: Int?, data: T, dates: DateEncoding = .deferredToDate
    ) throws -> (bytes: Data, tree: CanonicalNode?, nesting: Int) {
        do {
            let root = CanonicalEncoder(dates: dates)
            let object = CanonicalObject()
            try EnvelopeMember.forEachWritten(oldestReader: oldestReader != nil) { member in
                switch member {
                case .data: object.set(member.rawValue, try root.wrap(data, key: member))
                case .oldestReader: if let oldestReader { object.set(member.rawValue, .number(String(oldestReader))) }
                case .schema: object.set(member.rawValue, .string(schema))
                case .version: object.set(member.rawValue, .number(String(version)))
                }
            }
            if root.needsFoundation { throw CanonicalEncoderUnsupported() }
            object.setInWrittenOrder()  // `forEachWritten` gives the members sorted
            let tree = CanonicalNode.object(object)
            var out: [UInt8] = []
            out.reserveCapacity(128)
            let nesting = try tree.write(to: &out, depth: 0)
            return (Data(out), tree, nesting)
        } catch is CanonicalEncoderUnsupported {
            let bytes = try foundationEncode(
                Envelope(schema: schema, version: version, oldestReader: oldestReader, data: data), dates: dates)
            return (bytes, nil, 0)
        }
    }

    /// `value` through Keepsake's own encoder; throws `CanonicalEncoderUnsupported` for a type
    /// it leaves to `JSONEncoder`.
    static func ownEncode<T: Encodable>(_ value: T, dates: DateEncoding = .deferredToDate) throws -> Data {
        let encoder = CanonicalEncoder(dates: dates)
        let node: CanonicalNode
        if T.self == Date.self, let date = value as? Date {
            node = try encoder.wrapDate(date, key: nil)
        } else if T.self == String.self, let text = value as? String {
            node = .string(text)
        } else {
            if T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
                throw CanonicalEncoderUnsupported()
            }
            try value.encode(to: encoder)
            if encoder.needsFoundation { throw CanonicalEncoderUnsupported() }
            guard let encoded = encoder.node else {
                throw EncodingError.invalidValue(
                    value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
            }
            node = encoded
        }
        var out: [UInt8] = []
        out.reserveCapacity(128)
        try node.write(to: &out, depth: 0)
        return Data(out)
    }

    /// `value` through Foundation's `JSONEncoder`, configured as the canonical form: the
    /// reference ``encode(_:)`` is checked against.
    static func foundationEncode<T: Encodable>(_ value: T, dates: DateEncoding = .deferredToDate) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            let written: DateEncoding.WrittenDate
            do throws(ISO8601.Failure) {
                written = try dates.written(date)
            } catch {
                throw EncodingError.invalidValue(
                    date,
                    .init(
                        codingPath: encoder.codingPath, debugDescription: "Cannot write the date: \(error.reason)."))
            }
            var container = encoder.singleValueContainer()
            switch written {
            case let .string(text): try container.encode(text)
            case let .number(text):
                // `JSONEncoder` writes a `Decimal` as its digits: exact for a date's at most
                // 35 significant digits (its mantissa holds 38).
                guard let number = Decimal(string: text, locale: nil), number.description == text else {
                    throw EncodingError.invalidValue(
                        date,
                        .init(
                            codingPath: encoder.codingPath,
                            debugDescription: "Cannot write the date exactly as the number \(written)."))
                }
                try container.encode(number)
            }
        }
        encoder.dataEncodingStrategy = .base64
        return try encoder.encode(value)
    }

    /// Appends `text` as a JSON string literal.
    package static func appendString(_ text: String, to out: inout Data) {
        var bytes: [UInt8] = []
        appendString(text, to: &bytes)
        out.append(contentsOf: bytes)
    }

    /// Appends `text` as a JSON string literal.
    package static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0xF)]
                ])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// The cause of a failed encode, for a ``KeepsakeError``: the failing coding path and reason of
/// an `EncodingError` (never the value), else the error described.
package func encodingCause(_ error: any Error) -> KeepsakeError.Cause {
    guard let error = error as? EncodingError, case let .invalidValue(_, context) = error else {
        return .other(String(describing: error))
    }
    let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    return .other(path.isEmpty ? context.debugDescription : "at \(path): \(context.debugDescription)")
}
