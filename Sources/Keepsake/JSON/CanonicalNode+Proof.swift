import Foundation

// What a write-back's proof reads instead of re-parsing the bytes it just wrote: the encoder's
// own tree, seen exactly as `JSONParser` would read the bytes `write(to:depth:)` makes of it —
// members in written (sorted) order, a sub-encoder as the node it holds, the same nesting bound
// (`TreeNode.written`, the nesting `write(to:depth:)` returns). `CanonicalEncoderTests` checks that the
// tree seen that way is what the parser reads from the bytes, over the sample models and random
// values, and that decoding from either gives the same values and errors.

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
    var resolved: CanonicalNode {
        guard case let .encoder(encoder) = self else { return self }
        return (encoder.node ?? .object(CanonicalObject())).resolved
    }
}
