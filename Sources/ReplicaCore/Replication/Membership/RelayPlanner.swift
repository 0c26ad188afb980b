/// Which member should pass on which origin's updates to this node.
///
/// In a partial partition this node cannot hear origin A while member B, which we hear, does.
/// Then we subscribe to B's relay of A (topic "r" + A + 0x00 on B's PUB); B's XPUB sees that
/// subscription and re-publishes A's updates, to the subscribers that asked only. The choice is
/// per origin, stable (a working relay is kept) and otherwise the first candidate by id, so
/// every node makes it alike without coordination.
enum RelayPlanner {
    struct View: Equatable, Sendable {
        var node: NodeID
        /// We have not heard this member on its own connections for the suspect time.
        var directlySilent: Bool
        /// The members it said, in its last heartbeat, that it hears directly.
        var hears: Set<NodeID>
    }

    /// The relay to use for each origin we cannot hear ourselves (origins absent: none needed,
    /// or nobody can relay them).
    static func plan(_ views: [View], current: [NodeID: NodeID]) -> [NodeID: NodeID] {
        let reachable = Set(views.filter { !$0.directlySilent }.map(\.node))
        var plan: [NodeID: NodeID] = [:]
        for origin in views where origin.directlySilent {
            let candidates = views.filter { reachable.contains($0.node) && $0.hears.contains(origin.node) }.map(\.node).sorted()
            if let kept = current[origin.node], candidates.contains(kept) {
                plan[origin.node] = kept
            } else if let first = candidates.first {
                plan[origin.node] = first
            }
        }
        return plan
    }
}
