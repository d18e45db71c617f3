import Foundation

extension JSONValue {
    /// The value as compact JSON: members in the order given, numbers as their literal text,
    /// strings escaped as ``CanonicalJSON`` escapes them. Used to write this release's values
    /// into a merged record (`MergedJSON`).
    func write(to out: inout Data) {
        switch self {
        case .null: out.append(contentsOf: Array("null".utf8))
        case let .bool(flag): out.append(contentsOf: Array((flag ? "true" : "false").utf8))
        case let .number(text): out.append(contentsOf: Array(text.utf8))
        case let .string(text): CanonicalJSON.appendString(text, to: &out)
        case let .array(elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(object):
            out.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                CanonicalJSON.appendString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
