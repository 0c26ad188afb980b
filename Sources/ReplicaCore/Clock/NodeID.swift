/// The name of a node in the cluster: 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
/// Unique per cluster; it breaks ties between equal timestamps.
public struct NodeID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public static let maxLength = 64

    public let rawValue: String

    /// Fails for an empty, over-long or non-ASCII-identifier name.
    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        guard Self.isValid(value) else { preconditionFailure("invalid node id literal \(value)") }
        rawValue = value
    }

    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return !bytes.isEmpty && bytes.count <= maxLength && bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    /// Byte order of the UTF-8 (ASCII) name: the same on every platform and in SQLite.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8) }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let id = NodeID(rawValue: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid node id \(name)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
