/// Whether another process runs with this node's id (`Problem.Kind.identity`), judged from the
/// records of this node that members hold.
///
/// Only a node writes its own active record. So an **active** record of this id that would
/// replace ours, at another address, was written by another process: a copy of this data
/// directory, or another directory started with the same `--id`. At our own address it may be
/// an earlier life of ours (a restart after a re-assertion raised our record's epoch above the
/// clock, which is not kept across restarts): that is answered once, and is a clash only if
/// another such record follows within the window.
/// The two then re-assert against each other every round of gossip, and members dial one, then
/// the other. Two processes writing as one node overwrite each other's counter slots (one slot
/// per incarnation, and a copied directory has the same incarnation): increments are lost.
/// That is why, while the clash stands, local writes are refused.
///
/// Not a clash: a record with status `left` or `forgotten` (an operator's `leave` or `forget`
/// reaching a live node, answered by re-asserting once), and, once, an older life of ours at a
/// higher epoch (a directory replaced while the clock was behind: same address, another
/// incarnation, or the same one after a restart; our re-assertion replaces it everywhere and it
/// does not come back).
struct IdentityClash: Equatable, Sendable {
    /// How long after the last overriding record the clash is over, and within which a second
    /// one shows a live rival.
    let window: Duration
    /// When an active record overrode ours last, and the record.
    private(set) var lastOverride: Override?
    struct Override: Equatable, Sendable {
        var at: ContinuousClock.Instant
        var record: MemberRecord
    }
    /// Since when another process is known to use our id.
    private(set) var since: ContinuousClock.Instant?

    init(window: Duration) {
        self.window = window
    }

    /// The rival's record while a clash stands.
    var rival: MemberRecord? { since == nil ? nil : lastOverride?.record }

    /// A member held `record` of this node, which would have replaced `ours` (we re-asserted).
    /// Returns true when this starts a clash.
    mutating func overridden(by record: MemberRecord, ours: MemberRecord, now: ContinuousClock.Instant) -> Bool {
        guard record.status == .active else { return false }
        let again = lastOverride.map { now - $0.at < window } ?? false
        lastOverride = Override(at: now, record: record)
        guard since == nil, again || record.address != ours.address else { return false }
        since = now
        return true
    }

    /// One tick: true when a clash ends (no overriding record for `window`).
    mutating func tick(now: ContinuousClock.Instant) -> Bool {
        guard since != nil, let last = lastOverride, now - last.at >= window else { return false }
        since = nil
        lastOverride = nil
        return true
    }
}
