/// A departure in progress, in two phases.
///
/// 1. **Hand-off.** The members alive when `leave` starts are asked, by waiting, to hold every
///    update this process published: each member's heartbeats report how far it holds our
///    stream (`PeerReport.through`), and it repairs what it lacks from our retransmit buffer
///    meanwhile, since we keep running. Updates travel on PUB and the departure on DEALER, so
///    without this wait a member could acknowledge the departure, hang up, and never receive
///    the last writes (an outside tester lost them over 100 ms links).
/// 2. **Departure.** Once every member asked holds them (or the hand-off time is up and at
///    least one does), the departure is announced and each member's acknowledgement awaited.
///
/// Writes of an earlier run of the node are in no stream of this process: when the store holds
/// any (`earlierWrites`), a member confirms only once its digest has equalled ours (equal state;
/// our own writes are refused meanwhile, and members sync what differs while both are quiet).
///
/// If no member holds what this node wrote when the hand-off time is up, the node does not
/// leave (unless forced): its writes would be only in its data directory.
///
/// The members asked are fixed when the leave starts, so the figures reported are about them: a
/// member that comes alive or goes silent meanwhile changes nothing. One that leaves (or is
/// forgotten) meanwhile is no longer asked: what it holds leaves with it, and it will never
/// confirm nor acknowledge. (Two nodes leaving at once waited for each other: up to 12 s, the
/// other named as not confirming in time; found by an outside tester.) During the hand-off, if
/// it was the last one holding our writes, the others must still confirm (or the node stays);
/// once the departure is announced it cannot be taken back, and the node leaves at the deadline.
///
/// A member that hears us takes our departure from our own connection (the announcement on
/// PUB) and holds back the copy that reaches its ROUTER, which proves nothing by itself when the
/// cluster runs insecure (`Membership`); its answer may leave before the announcement is read.
/// So the members that have not acknowledged are asked again every `reaskInterval`.
struct LeaveProgress: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        case handingOff(until: MonotonicInstant)
        case departing(until: MonotonicInstant)
    }

    /// What the owner does next.
    enum Action: Equatable, Sendable {
        /// Announce the departure and ask the members for their acknowledgement.
        case announce
        /// Ask these members again (they have not acknowledged yet).
        case reask(Set<NodeID>)
        /// Done: `left` false when the node stays (no member holds its writes).
        case finish(left: Bool)
    }

    private(set) var asked: Set<NodeID>
    /// This process's update stream: its epoch, and the last sequence it published (kept up to
    /// date as members report, although since 0.27.0 writes still held for the first clock
    /// check when the leave began are refused, not published).
    let epoch: UInt64
    var published: UInt64
    /// The store holds versions this node wrote in an earlier run.
    let earlierWrites: Bool
    /// A second `leave --force` during the hand-off makes it forced.
    var force: Bool
    let acknowledgementTime: Duration
    private(set) var phase: Phase
    private(set) var holding: Set<NodeID> = []
    private(set) var acknowledged: Set<NodeID> = []
    /// When the departure was last sent to the members that have not acknowledged it.
    private var lastAsked: MonotonicInstant?
    static let reaskInterval: Duration = .milliseconds(250)

    init(asking members: Set<NodeID>, epoch: UInt64, published: UInt64, earlierWrites: Bool = false, force: Bool,
         now: MonotonicInstant, handOffTime: Duration, acknowledgementTime: Duration) {
        asked = members
        self.epoch = epoch
        self.published = published
        self.earlierWrites = earlierWrites
        self.force = force
        self.acknowledgementTime = acknowledgementTime
        phase = .handingOff(until: now + handOffTime)
    }

    /// The first step, once the latest report of each member asked has been given to `heard`:
    /// with nothing to hand over, or nobody to hand it to, the departure goes ahead or ends now.
    mutating func start(now: MonotonicInstant) -> Action? {
        guard case .handingOff = phase else { return nil }
        if asked.isEmpty { return nothingToHandOver || force ? depart(now: now) : .finish(left: false) }
        return holding == asked ? depart(now: now) : nil
    }

    /// `node`'s report of our stream (from its latest heartbeat; nil: it reports none), and
    /// whether its digest in that heartbeat equals ours.
    mutating func heard(_ report: PeerReport?, sameState: Bool = false, from node: NodeID, now: MonotonicInstant) -> Action? {
        guard asked.contains(node), holds(report, sameState: sameState) else { return nil }
        holding.insert(node)
        guard case .handingOff = phase, holding == asked else { return nil }
        return depart(now: now)
    }

    /// Whether a member holds every update this process published (by its report) and, if the
    /// store holds writes of earlier runs, everything we hold (equal digests).
    func holds(_ report: PeerReport?, sameState: Bool = false) -> Bool {
        if sameState { return true }
        guard !earlierWrites else { return false }
        // (Beyond what we published is no honest member's report: a liar's claim holds nothing.)
        return published == 0 || report.map { $0.epoch == epoch && $0.through == published } ?? false
    }

    /// Nothing written by this node is in the store: leaving loses nothing, whoever is there.
    var nothingToHandOver: Bool { published == 0 && !earlierWrites }

    /// `node` acknowledged the departure (a members reply came back from it).
    mutating func acknowledged(by node: NodeID) -> Action? {
        guard case .departing = phase, asked.contains(node) else { return nil }
        acknowledged.insert(node)
        return acknowledged == asked ? .finish(left: true) : nil
    }

    /// `node` left the cluster, or was forgotten: it is no longer asked (the next `tick` acts
    /// on what that settles).
    mutating func memberDeparted(_ node: NodeID) {
        guard asked.remove(node) != nil else { return }
        holding.remove(node)
        acknowledged.remove(node)
        settledByDeparture = true
    }

    /// A member asked departed since the last `tick`: the remaining ones may be all there is to
    /// wait for.
    private var settledByDeparture = false

    mutating func tick(now: MonotonicInstant) -> Action? {
        defer { settledByDeparture = false }
        switch phase {
        case .handingOff where settledByDeparture && asked.isEmpty:
            return nothingToHandOver || force ? depart(now: now) : .finish(left: false)
        case .handingOff where settledByDeparture && holding == asked:
            return depart(now: now)
        case .handingOff(let until) where now >= until:
            // Those that hold the writes pass them on to the others (anti-entropy).
            return holding.isEmpty && !force ? .finish(left: false) : depart(now: now)
        case .departing where settledByDeparture && acknowledged == asked && (!holding.isEmpty || nothingToHandOver || force):
            // (Not when the member gone was the last one holding our writes: the departure is
            // announced, so the node leaves at the deadline all the same, as before, but the
            // others are given the whole wait to repair from it.)
            return .finish(left: true)
        case .departing(let until) where now >= until:
            return .finish(left: true)
        case .departing where lastAsked.map { now - $0 >= Self.reaskInterval } ?? false && acknowledged != asked:
            lastAsked = now
            return .reask(asked.subtracting(acknowledged))
        default:
            return nil
        }
    }

    private mutating func depart(now: MonotonicInstant) -> Action {
        phase = .departing(until: now + acknowledgementTime)
        lastAsked = now
        return .announce
    }

    /// Members asked that did not confirm holding this process's writes.
    var lacking: Set<NodeID> { asked.subtracting(holding) }
}
