import Foundation

/// Where each value of a JSON document lies in its bytes: what a merged save needs to write a
/// newer release's values back byte for byte (its escapes, its number forms, its spacing), not
/// as Keepsake would write them.
indirect enum JSONSpans: Sendable {
    /// A string, number, literal: its bytes.
    case leaf(Range<Int>)
    /// An object: its bytes, and each member's name bytes (quotes included) and value.
    case object(Range<Int>, [ExactString: (name: Range<Int>, value: JSONSpans)])
    /// An array: its bytes and each element.
    case array(Range<Int>, [JSONSpans])

    /// The bytes of the whole value.
    var range: Range<Int> {
        switch self {
        case let .leaf(range), let .object(range, _), let .array(range, _): range
        }
    }

    /// The member `name` of an object.
    subscript(member name: String) -> (name: Range<Int>, value: JSONSpans)? {
        guard case let .object(_, members) = self else { return nil }
        return members[ExactString(name)]
    }

    /// The element at `index` of an array.
    subscript(element index: Int) -> JSONSpans? {
        guard case let .array(_, elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The spans of `data`, which must hold exactly one JSON value. Linear in its size; nesting
    /// is bounded as ``JSONParser`` bounds it.
    ///
    /// - Throws: ``JSONSyntaxError`` for bytes that are not JSON.
    static func of(_ data: Data) throws(JSONSyntaxError) -> JSONSpans {
        try JSONParser.withParser(data) { parser throws(JSONSyntaxError) in
            let spans = try parser.parseSpans(depth: 0)
            try parser.expectEnd()
            return spans
        }
    }
}
