import Foundation

/// Whether another process runs with this node's id (`Problem.Kind.identity`), judged from what
/// members hear, not from what anyone claims.
///
/// Two processes with one id (a copied data directory, or `--id` given twice) overwrite each
/// other's counter slots, so while a clash stands local writes are refused. A member record
/// naming this id elsewhere proves nothing (anyone can send one; it is answered by re-asserting
/// our own record). What proves a second process is a member we hear reporting, in its own
/// heartbeats, that it hears this id **directly**, on that id's own connection, in a life that
/// is not ours (another epoch). One member's reports must hold for `confirmAfter` with no pause
/// longer than `window`: right after a restart each member reports our previous life for a
/// heartbeat or two, until it hears our first heartbeat, and such reports by several members,
/// or one late (read from a backlog), are not a stretch. The clash is over once no such report
/// came for `window`.
struct IdentityClash: Equatable, Sendable {
    /// How long without a report before the evidence (and a clash) is over.
    let window: Duration
    /// How long reports must go on before they show a clash.
    let confirmAfter: Duration

    /// A stretch of one member's reports of another life of this id.
    struct Evidence: Equatable, Sendable {
        /// The member that reported, and the life it hears.
        var member: NodeID
        var epoch: UInt64
        var first: MonotonicInstant
        var last: MonotonicInstant
    }
    /// The latest stretch (what `rival` shows), and each member's.
    private(set) var evidence: Evidence?
    private var stretches: [NodeID: Evidence] = [:]
    /// Since when another process is known to use our id.
    private(set) var since: MonotonicInstant?

    init(window: Duration, confirmAfter: Duration) {
        self.window = window
        self.confirmAfter = confirmAfter
    }

    /// What shows the clash while it stands.
    var rival: Evidence? { since == nil ? nil : evidence }

    /// `member`'s heartbeat reports this id: heard directly or not, in life `epoch`. Returns
    /// true when this starts a clash.
    mutating func reported(epoch: UInt64, hearsDirectly: Bool, by member: NodeID, ourEpoch: UInt64, now: MonotonicInstant) -> Bool {
        guard hearsDirectly, epoch != 0, epoch != ourEpoch else { return false }
        var stretch = stretches[member].flatMap { now - $0.last < window ? $0 : nil }
            ?? Evidence(member: member, epoch: epoch, first: now, last: now)
        stretch.epoch = epoch
        stretch.last = now
        stretches[member] = stretch
        evidence = stretch
        guard since == nil, now - stretch.first >= confirmAfter else { return false }
        since = now
        return true
    }

    /// One tick: true when a clash ends (no report of another life for `window`).
    mutating func tick(now: MonotonicInstant) -> Bool {
        guard let last = evidence?.last, now - last >= window else { return false }
        evidence = nil
        stretches.removeAll()
        guard since != nil else { return false }
        since = nil
        return true
    }
}
