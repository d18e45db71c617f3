import Foundation

// What a write-back's verification reads instead of re-parsing the bytes it just wrote: the
// encoder's own tree, seen exactly as `JSONParser` would read the bytes `write(to:depth:)`
// makes of it — members in written (sorted) order, the same nesting bound, the same index on
// large objects. `CanonicalEncoderTests` checks `parse(write(tree)) == readBack(tree)` over the
// sample models and random values, so skipping the parse checks nothing less.

extension CanonicalNode {
    /// The value `JSONParser` reads from the bytes ``write(to:depth:)`` writes for this node.
    ///
    /// - Throws: `JSONSyntaxError` where the parser would: nesting deeper than it reads.
    func readBack(depth: Int = 0) throws(JSONSyntaxError) -> JSONValue {
        switch self {
        case let .string(text): return .string(text)
        case let .number(text): return .number(text)
        case let .bool(flag): return .bool(flag)
        case .null: return .null
        case let .encoder(encoder): return try (encoder.node ?? .object(CanonicalObject())).readBack(depth: depth)
        case let .array(array):
            guard depth < JSONParser.maxDepth else { throw JSONParser.tooDeep }
            var elements: [JSONValue] = []
            elements.reserveCapacity(array.elements.count)
            for element in array.elements { elements.append(try element.readBack(depth: depth + 1)) }
            return .array(elements)
        case let .object(object):
            guard depth < JSONParser.maxDepth else { throw JSONParser.tooDeep }
            let written = object.writtenMembers
            var members: [JSONMember] = []
            members.reserveCapacity(written.count)
            for member in written {
                members.append(JSONMember(key: member.key, value: try member.value.readBack(depth: depth + 1)))
            }
            guard members.count > JSONObject.indexThreshold else { return .object(JSONObject(members: members)) }
            var index = [ExactString: Int](minimumCapacity: 2 * members.count)
            for (position, member) in members.enumerated() { index[ExactString(member.key)] = position }
            return .object(JSONObject(members: members, index: index))
        }
    }

    /// Whether this node and `other` write the same bytes, compared on the trees: strings and
    /// member names by their UTF-8 bytes, numbers by their text, members in written order.
    func writesSame(as other: CanonicalNode, depth: Int = 0) -> Bool {
        guard depth < JSONParser.maxDepth * 2 else { return false }
        switch (resolved, other.resolved) {
        case let (.string(first), .string(second)): return first.isExactly(second)
        case let (.number(first), .number(second)): return first == second
        case let (.bool(first), .bool(second)): return first == second
        case (.null, .null): return true
        case let (.array(first), .array(second)):
            guard first.elements.count == second.elements.count else { return false }
            for (one, two) in zip(first.elements, second.elements) where !one.writesSame(as: two, depth: depth + 1) {
                return false
            }
            return true
        case let (.object(first), .object(second)):
            let one = first.writtenMembers
            let two = second.writtenMembers
            guard one.count == two.count else { return false }
            for (a, b) in zip(one, two)
            where !a.key.isExactly(b.key) || !a.value.writesSame(as: b.value, depth: depth + 1) {
                return false
            }
            return true
        default: return false
        }
    }

    /// The node itself, or for a sub-encoder the node it holds (what is written in its place).
    private var resolved: CanonicalNode {
        guard case let .encoder(encoder) = self else { return self }
        return (encoder.node ?? .object(CanonicalObject())).resolved
    }
}
