import Foundation

/// A node of a tree `TreeDecoder` decodes from: a value on a stored record's ``JSONTape`` (its
/// entry), a parsed ``JSONValue``, or the encoder's own `CanonicalNode` seen as `JSONParser`
/// would read the bytes written from it (members in written order, a sub-encoder as the node it
/// holds).
///
/// One concrete type rather than a protocol the decoder is generic over: a decoder reaches its
/// containers through `Decoder`'s existentials, whose witnesses for a generic type are compiled
/// once for every tree type, not for each — measured, such a decoder took twice the
/// instructions of the parsed-only one it replaced. A switch per access costs next to nothing.
enum TreeNode {
    case tape(JSONTape, Int)
    case parsed(JSONValue)
    case written(CanonicalNode)

    /// The `null` put in place of a missing value (`superDecoder`).
    static var null: TreeNode { .parsed(.null) }

    var isNull: Bool {
        switch self {
        case let .tape(tape, index): return tape.entries[index].kind == .null
        case .parsed(.null): return true
        case .parsed: return false
        case let .written(node):
            if case .null = node.resolved { return true }
            return false
        }
    }

    var asBool: Bool? {
        switch self {
        case let .tape(tape, index):
            switch tape.entries[index].kind {
            case .true: return true
            case .false: return false
            default: return nil
            }
        case let .parsed(.bool(flag)): return flag
        case .parsed: return nil
        case let .written(node):
            if case let .bool(flag) = node.resolved { return flag }
            return nil
        }
    }

    /// A number's literal text.
    var asNumber: String? {
        switch self {
        case let .tape(tape, index): return tape.entries[index].kind == .number ? tape.number(at: index) : nil
        case let .parsed(.number(text)): return text
        case .parsed: return nil
        case let .written(node):
            if case let .number(text) = node.resolved { return text }
            return nil
        }
    }

    var asString: String? {
        switch self {
        case let .tape(tape, index): return tape.entries[index].isString ? tape.string(at: index) : nil
        case let .parsed(.string(text)): return text
        case .parsed: return nil
        case let .written(node):
            if case let .string(text) = node.resolved { return text }
            return nil
        }
    }

    var asArray: TreeElements? {
        switch self {
        case let .tape(tape, index):
            return tape.entries[index].kind == .array ? .tape(tape, tape.elements(of: index)) : nil
        case let .parsed(.array(elements)): return .parsed(elements)
        case .parsed: return nil
        case let .written(node):
            if case let .array(array) = node.resolved { return .written(array.elements) }
            return nil
        }
    }

    var asObject: TreeObject? {
        switch self {
        case let .tape(tape, index):
            let entry = tape.entries[index]
            guard entry.kind == .object else { return nil }
            // A large object is looked up through the index a `JSONObject` has, so that decoding
            // one of 100k members stays linear.
            if entry.count > JSONObject.indexThreshold, case let .object(object) = tape.value(at: index) {
                return .parsed(object)
            }
            return .tape(tape, index)
        case let .parsed(.object(object)): return .parsed(object)
        case .parsed: return nil
        case let .written(node):
            if case let .object(object) = node.resolved { return .written(object) }
            return nil
        }
    }

    /// A short name of the value's kind, for error messages (never the value itself).
    var kindName: String {
        if case let .tape(tape, index) = self { return tape.kindName(at: index) }
        return leaf.kindName
    }

    /// The value as a ``JSONValue`` when it is a string or a number (what a date is read from);
    /// otherwise a value of the same kind, empty.
    var leaf: JSONValue {
        switch self {
        case let .tape(tape, index):
            switch tape.entries[index].kind {
            case .array: return .array([])
            case .object: return .object(JSONObject(members: []))
            default: return tape.value(at: index)
            }
        case let .parsed(value): return value
        case let .written(node):
            switch node.resolved {
            case let .string(text): return .string(text)
            case let .number(text): return .number(text)
            case let .bool(flag): return .bool(flag)
            case .null: return .null
            case .array: return .array([])
            case .object, .encoder: return .object(JSONObject(members: []))
            }
        }
    }
}

/// An object of a ``TreeNode``: its members looked up by their names' exact bytes.
enum TreeObject {
    /// An object of at most `JSONObject.indexThreshold` members on a tape (a larger one is
    /// `.parsed`, with its index).
    case tape(JSONTape, Int)
    case parsed(JSONObject)
    case written(CanonicalObject)

    subscript(key: String) -> TreeNode? {
        switch self {
        case let .tape(tape, index): return tape.member(key, of: index).map { .tape(tape, $0) }
        case let .parsed(object): return object[key].map(TreeNode.parsed)
        case let .written(object):
            // The encoder keeps one member per name as `String` compares names (canonical
            // equivalence), so a member found that way that is not byte for byte `key` means
            // no member is.
            guard let slot = object.find(key), object.members[slot].key.isExactly(key) else { return nil }
            return .written(object.members[slot].value)
        }
    }

    /// The member names, in the order they are written.
    var keys: [String] {
        switch self {
        case let .tape(tape, index): return tape.memberNames(of: index).map(tape.string(at:))
        case let .parsed(object): return object.keys
        case let .written(object): return object.writtenMembers.map(\.key)
        }
    }
}

/// An array's elements of a ``TreeNode``.
enum TreeElements {
    /// A tape's array: the entries of its elements.
    case tape(JSONTape, [Int])
    case parsed([JSONValue])
    case written([CanonicalNode])

    var count: Int {
        switch self {
        case let .tape(_, elements): return elements.count
        case let .parsed(elements): return elements.count
        case let .written(elements): return elements.count
        }
    }

    subscript(index: Int) -> TreeNode {
        switch self {
        case let .tape(tape, elements): return .tape(tape, elements[index])
        case let .parsed(elements): return .parsed(elements[index])
        case let .written(elements): return .written(elements[index])
        }
    }
}
