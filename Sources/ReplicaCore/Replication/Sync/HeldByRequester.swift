/// What a sync reply may leave out because its requester holds it already.
///
/// A reply to a request that names one of our marks carries every key we stored since, and
/// under steady writes that is mostly what reached both of us by the streams: a node that was
/// the only writer got its own 554,299 writes back from a periodic sync with a member that
/// lagged (helper-75). Two kinds of writes are known held without asking:
///
/// - **The requester's own writes of its current life.** A node commits its writes before it
///   publishes them, and keeps them while it runs. Its life began at its epoch (ms since 1970
///   at start); writes of an earlier life it may have lost (a power cut: `synchronous =
///   NORMAL`), and their stamps may reach past its epoch by as much as a clock may lead, so
///   the floor is `margin` past the epoch (twice the drift any member accepts).
/// - **Our own writes through the sequence it reports holding** of our stream, in this life of
///   ours (`PublishedStamps` turns the sequence into stamps). Reports count only what is held
///   (`PeerSession.heldThrough`), and drop to nothing when a received entry is dropped.
///
/// Only for requests that name a mark of ours: such a requester completed a sync with us in its
/// current life, so what any earlier life of it lacked has been sent to it in full (the first
/// sync of every life, and every sync after a dropped entry, names no mark). Nothing is left
/// out while an identity is in doubt: two processes writing as one node make "its own writes"
/// and "its report of us" mean nothing.
enum HeldByRequester {
    static func writes(
        requester: NodeID, requesterEpoch: UInt64, report: PeerReport?,
        responder: NodeID, epoch: UInt64, published: PublishedStamps,
        margin: Duration, identityInDoubt: Bool
    ) -> HeldWrites {
        var held = HeldWrites.nothing
        guard !identityInDoubt, requester != responder else { return held }
        let marginMillis = UInt64(max(margin, .zero) / .milliseconds(1))
        if let floor = floor(ofLife: requesterEpoch, margin: marginMillis) {
            held.add(requester, floor...HybridTimestamp(rawValue: .max))
        }
        if let report, report.epoch == epoch, let ourFloor = floor(ofLife: epoch, margin: marginMillis),
           let stamps = published.stamps(through: report.through), stamps.upperBound >= ourFloor {
            held.add(responder, max(ourFloor, stamps.lowerBound)...stamps.upperBound)
        }
        return held
    }

    /// The first stamp surely of the life that began at `epoch` (nil: no life known).
    private static func floor(ofLife epoch: UInt64, margin: UInt64) -> HybridTimestamp? {
        guard epoch != 0 else { return nil }
        let (wall, overflow) = epoch.addingReportingOverflow(margin)
        guard !overflow, wall <= HybridTimestamp.maxWallMillis else { return nil }
        return HybridTimestamp(wallMillis: wall, logical: 0)
    }
}
