/// How `Replica.leave()` went.
public struct Departure: Sendable, Equatable, Codable {
    /// Whether the node left the cluster. False when it stayed: no member confirmed holding
    /// the writes this process made (within `leaveTimeout`), so leaving would have left them only
    /// in its data directory. It then keeps running as a member, and accepts writes again.
    public var left: Bool
    /// The members alive when the leave began, less those that left or were forgotten since:
    /// asked to hold this node's writes and to acknowledge its departure.
    public var asked: [NodeID]
    /// Those whose heartbeats reported holding every update this process published.
    public var holding: [NodeID]
    /// Those that acknowledged the departure.
    public var acknowledged: [NodeID]
    /// How many updates this process published.
    public var published: UInt64
    /// The store held versions this node wrote in an earlier run: a member confirmed holding
    /// them only when its digest equalled this node's.
    public var earlierWrites: Bool

    public init(left: Bool, asked: [NodeID], holding: [NodeID], acknowledged: [NodeID], published: UInt64, earlierWrites: Bool) {
        self.left = left
        self.asked = asked
        self.holding = holding
        self.acknowledged = acknowledged
        self.published = published
        self.earlierWrites = earlierWrites
    }

    /// Reads a departure of a node before 0.19.0 too, which did not send `earlierWrites` (false).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        left = try container.decode(Bool.self, forKey: .left)
        asked = try container.decode([NodeID].self, forKey: .asked)
        holding = try container.decode([NodeID].self, forKey: .holding)
        acknowledged = try container.decode([NodeID].self, forKey: .acknowledged)
        published = try container.decode(UInt64.self, forKey: .published)
        earlierWrites = try container.decodeIfPresent(Bool.self, forKey: .earlierWrites) ?? false
    }

    /// What was to be handed over, in words: "the 12 update(s) this node published in this
    /// run and its writes of earlier runs".
    public var writesText: String {
        switch (published, earlierWrites) {
        case (0, false): "nothing (this node wrote nothing the store still holds)"
        case (0, true): "the writes of this node's earlier runs"
        case (_, false): "the \(published) update(s) this node published"
        case (_, true): "the \(published) update(s) this node published in this run and the writes of its earlier runs"
        }
    }

    /// Members asked that did not confirm holding this node's writes: they get them from the
    /// members that did (anti-entropy), once they can reach one.
    public var lacking: [NodeID] { asked.filter { !holding.contains($0) } }
}
