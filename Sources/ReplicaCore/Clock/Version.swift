/// The version of a replicated entry: when it was written (HLC) and by whom.
/// A total order: timestamp first, node id breaks ties. Last-writer-wins keeps the highest.
public struct Version: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var timestamp: HybridTimestamp
    public var node: NodeID

    public init(timestamp: HybridTimestamp, node: NodeID) {
        self.timestamp = timestamp
        self.node = node
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.timestamp != rhs.timestamp ? lhs.timestamp < rhs.timestamp : lhs.node < rhs.node
    }

    /// `timestamp@node`, e.g. `1763812345678.3@node1`.
    public var description: String { "\(timestamp)@\(node)" }
}
