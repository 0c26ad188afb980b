/// Relays: the origins this node takes through another member (by origin: the member that
/// relays it, as `RelayPlanner` chose), and the origins members asked this node to pass on.
struct Relays: Sendable {
    var taken: [NodeID: NodeID] = [:]
    private(set) var served: Set<NodeID> = []

    /// A member subscribed to `source`'s relayed updates here (at most `limit` sources).
    mutating func serve(_ source: NodeID, limit: Int) {
        if served.count < limit { served.insert(source) }
    }

    mutating func stopServing(_ source: NodeID) { served.remove(source) }

    /// The link to `relay` closed: what was taken through it is chosen again.
    mutating func relayGone(_ relay: NodeID) { taken = taken.filter { $0.value != relay } }
}
