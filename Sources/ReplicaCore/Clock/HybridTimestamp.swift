/// A hybrid-logical-clock reading: 48 bits of wall-clock milliseconds since the Unix epoch,
/// then a 16-bit logical counter. Packed into one `UInt64` so that integer order is clock order.
public struct HybridTimestamp: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public static let maxWallMillis: UInt64 = (1 << 48) - 1
    public static let maxLogical: UInt16 = .max
    public static let zero = HybridTimestamp(rawValue: 0)

    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(wallMillis: UInt64, logical: UInt16) {
        precondition(wallMillis <= Self.maxWallMillis, "wall clock beyond 48 bits")
        rawValue = wallMillis << 16 | UInt64(logical)
    }

    public var wallMillis: UInt64 { rawValue >> 16 }
    public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `wallMillis.logical`, e.g. `1763812345678.3`.
    public var description: String { "\(wallMillis).\(logical)" }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
