/// Whether this node's clock may be below stamps its own id gave before: its store is new (a
/// wiped data directory, or a new node), a copy (a restored backup), or lost commits (an
/// unclean start, a damaged file set aside). Such a node's members may hold writes of its
/// earlier life stamped above what its clock would give now.
///
/// The clock starts above the highest stamp in the store, so a node that kept its store never
/// stamps below what it wrote. A wiped one with a clock 20 s behind gave an acknowledged write
/// a version below its own write of the same key from before the wipe; when the two met, the
/// older write won on every node, and nothing said so. So such a node takes the
/// timestamp of each member's heartbeat into its clock, as it would a received entry's, until
/// it has taken one from every active member: a member's clock is at or above every stamp it
/// received, those of the earlier life included. (Ending at the first member whose data it
/// held let a member that never had the old write end it.) Its local writes wait for
/// the first clock comparison with a member (when it has seeds), which needs a heartbeat.
///
/// A heartbeat timestamp beyond the drift the clock accepts is kept, and taken again once the
/// clock check has judged (a clock behind the members' is then allowed that much further): a
/// node 50 s behind refused the timestamp of a member 15 s ahead, and its writes were released
/// at its first verdict, stamped 50 s behind. One whose logical part is 0 is not
/// taken: a member before 0.30.0 may send its wall clock there, not its clock.
///
/// Otherwise heartbeats never touch the clock (they are not data: docs/architecture.md).
struct ForgottenStamps: Sendable, Equatable {
    /// Whether members' heartbeats move the clock now.
    private(set) var takesHeartbeatClocks: Bool
    /// The members whose heartbeat timestamp the clock has taken in.
    private var taken: Set<NodeID> = []
    /// The highest timestamp refused of each member, to take again after the clock check.
    private(set) var refused: [NodeID: HybridTimestamp] = [:]

    init(storeMayHaveForgotten: Bool) {
        takesHeartbeatClocks = storeMayHaveForgotten
    }

    /// Whether `timestamp`, from a member's heartbeat, is to be taken into the clock.
    func takes(_ timestamp: HybridTimestamp) -> Bool { takesHeartbeatClocks && timestamp.logical != 0 }

    /// The clock took `node`'s heartbeat timestamp in.
    mutating func took(from node: NodeID) {
        taken.insert(node)
        refused[node] = nil
    }

    /// The clock refused `node`'s heartbeat timestamp (beyond its drift limit).
    mutating func refusedTimestamp(_ timestamp: HybridTimestamp, from node: NodeID) {
        refused[node] = max(refused[node] ?? timestamp, timestamp)
    }

    /// Ends once the clock has taken a heartbeat timestamp of every member in `active` (this
    /// node excluded); not while it knows none (a node that has only seeds yet).
    mutating func settle(active: [NodeID]) {
        guard takesHeartbeatClocks, !active.isEmpty, active.allSatisfy(taken.contains) else { return }
        takesHeartbeatClocks = false
        refused = [:]
        taken = []
    }
}
