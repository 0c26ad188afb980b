/// Whether this node's clock may be below stamps its own id gave before: its store is new (a
/// wiped data directory, or a new node), a copy (a restored backup), or lost commits (an
/// unclean start, a damaged file set aside). Such a node's members may hold writes of its
/// earlier life stamped above what its clock would give now.
///
/// The clock starts above the highest stamp in the store, so a node that kept its store never
/// stamps below what it wrote. A wiped one with a clock 20 s behind gave an acknowledged write
/// a version below its own write of the same key from before the wipe; when the two met, the
/// older write won on every node, and nothing said so (helper-88). So, until it holds
/// everything some member holds (a completed sync with it, or equal digests), such a node takes
/// the timestamp of every member's heartbeat into its clock, as it would a received entry's
/// (within the drift limit): a member's clock is at or above every stamp it received, those of
/// the earlier life included. Its local writes wait for the first clock comparison with a
/// member (when it has seeds), which needs a heartbeat: by then the clock has taken one in.
///
/// Otherwise heartbeats never touch the clock (they are not data: docs/architecture.md).
struct ForgottenStamps: Sendable, Equatable {
    /// Whether members' heartbeats move the clock now.
    private(set) var takesHeartbeatClocks: Bool

    init(storeMayHaveForgotten: Bool) {
        takesHeartbeatClocks = storeMayHaveForgotten
    }

    /// This node holds everything a member holds: the clock has taken in all of its stamps.
    mutating func heldAllOfAMember() { takesHeartbeatClocks = false }
}
