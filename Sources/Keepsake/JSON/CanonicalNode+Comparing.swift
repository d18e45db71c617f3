import Foundation

// How a write-back of a type that is not `Equatable` compares the value it read back with the
// value it wrote: by the trees they encode to, as the bytes they write.

extension CanonicalNode {
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

extension CanonicalObject {
    /// The members in the order they are written: sorted by their names' UTF-8 bytes.
    var writtenMembers: [(key: String, value: CanonicalNode)] {
        if members.count <= 1 || zip(members, members.dropFirst()).allSatisfy({ $0.key.precedesExactly($1.key) }) {
            return members
        }
        return members.sorted { $0.key.precedesExactly($1.key) }
    }
}
