/// Writes a reader is known to hold already (or newer versions of their keys): per writer, a
/// range of timestamps. A sync reply lists its keys with it and leaves those writes out.
///
/// The store only applies it; whether a requester holds a write is the replication layer's
/// judgement (`HeldByRequester`).
public struct HeldWrites: Equatable, Sendable {
    public private(set) var ranges: [NodeID: ClosedRange<HybridTimestamp>] = [:]

    public init() {}

    /// Nothing held: every write is listed.
    public static let nothing = HeldWrites()

    public var isEmpty: Bool { ranges.isEmpty }

    /// Writes of `writer` stamped within `range` are held (replacing what was said of `writer`).
    public mutating func add(_ writer: NodeID, _ range: ClosedRange<HybridTimestamp>) {
        ranges[writer] = range
    }

    public func contains(_ version: Version) -> Bool {
        ranges[version.node]?.contains(version.timestamp) ?? false
    }
}
