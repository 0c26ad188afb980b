/// An entry that was applied to a replica's store, local or remote, as observers see it.
public struct Change: Sendable, Equatable {
    public enum Origin: Sendable, Equatable {
        /// Written through this replica's `set`.
        case local
        /// Received from a peer (published update or anti-entropy).
        case remote(NodeID)
    }

    public var entry: Entry
    public var origin: Origin

    public init(entry: Entry, origin: Origin) {
        self.entry = entry
        self.origin = origin
    }
}
