/// What a sync reply may leave out because its requester holds it already.
///
/// A reply to a request that names one of our marks carries every key we stored since, and
/// under steady writes that is mostly what reached both of us by the streams: a node that was
/// the only writer got its own 554,299 writes back from a periodic sync with a member that
/// lagged. Two kinds of writes are known held without asking:
///
/// - **The requester's own writes of its current life.** A node commits its writes before it
///   publishes them, and keeps them while it runs. Its life began at its epoch (ms since 1970
///   at start); writes of an earlier life it may have lost (a power cut: `synchronous =
///   NORMAL`), and their stamps may reach past its epoch by as much as a clock may lead, so
///   the floor is `margin` past the epoch (twice the drift any member accepts).
/// - **Every other writer's writes through the sequence it reports holding** of that writer's
///   stream, in the writer's life we know: ours (`PublishedStamps` records each publication),
///   or a member's we hear directly (its heartbeats pair a sequence with its clock). A third
///   writer's are what two members that both received them would otherwise send each other at
///   every periodic check. Reports count only what is held (`PeerSession.heldThrough`), and
///   drop to nothing when a received entry is dropped. The same margin applies: a write of the
///   writer's earlier life may be fetched back after its restart.
///
/// Only for requests that name a mark of ours: such a requester completed a sync with us in its
/// current life, so what any earlier life of it lacked has been sent to it in full (the first
/// sync of every life, and every sync after a dropped entry, names no mark). Nothing is left
/// out while our identity or the requester's is in doubt (two processes writing as one node
/// make "its own writes" and "its reports" mean nothing), nor of a writer whose identity is.
enum HeldByRequester {
    /// `reports`: the requester's latest report of each stream, by writer; `publications`:
    /// what we know of each writer's publications (ours too, under `responder`).
    static func writes(
        requester: NodeID, requesterEpoch: UInt64, reports: [NodeID: PeerReport], responder: NodeID,
        publications: (NodeID) -> PublishedStamps?, margin: Duration, doubted: Set<NodeID>
    ) -> HeldWrites {
        var held = HeldWrites.nothing
        guard requester != responder, !doubted.contains(requester), !doubted.contains(responder) else { return held }
        let marginMillis = UInt64(max(margin, .zero) / .milliseconds(1))
        if let floor = floor(ofLife: requesterEpoch, margin: marginMillis) {
            held.add(requester, floor...HybridTimestamp(rawValue: .max))
        }
        for (writer, report) in reports where writer != requester && !doubted.contains(writer) {
            guard let published = publications(writer), report.epoch == published.epoch,
                  let floor = floor(ofLife: published.epoch, margin: marginMillis),
                  let stamps = published.stamps(through: report.through), stamps.upperBound >= floor
            else { continue }
            held.add(writer, max(floor, stamps.lowerBound)...stamps.upperBound)
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
