/// Everything this node has decided and decides from: the member table and each member's
/// session, the syncs planned and served, the commit queue, this life's stream and hybrid
/// clock, the clock check, the checks its problems are listed from, and the deadlines of its
/// periodic duties. One value, owned by the `Replica` actor, which feeds it what happens and
/// carries out what it decides.
struct NodeCore {
    var clock: HybridLogicalClock
    var membership: Membership
    var sessions: [NodeID: PeerSession] = [:]
    var planner = SyncPlanner()
    var responder = SyncResponder(maxReplies: Replica.maxConcurrentReplies)
    var commits = CommitQueue()
    var relays = Relays()
    /// What this life published: its sequence, the keys for repairs, the stamps reports cover.
    var own: OwnStream
    var nextRequestID: UInt64 = 1
    var duties: PeriodicDuties
    var housekeeping: HousekeepingSchedule
    /// The wall and monotonic clocks at the last clock check (a step of the wall clock shows).
    var lastClockReading: (wall: UInt64, monotonic: MonotonicInstant)?
    /// When this node last resumed after a stall (`noticeStall`): handshakes that fail right
    /// after are members' dials that timed out meanwhile, not strangers.
    var lastStallEnded: MonotonicInstant?
    /// The member table's digest when it was last saved (`Replica+MemberTable.swift`), and
    /// when it may be saved next.
    var savedMemberTableDigest: UInt64?
    /// Which members never heard directly hold a link now.
    var unheardDials = UnheardDials()
    /// Set while a sync's intake is still busy reading what connections queued.
    var intakeBusySince: MonotonicInstant?
    /// Since when a wanted catch-up has found no member to serve it (warned after a while).
    var catchUpUnservedSince: MonotonicInstant?
    var leaving: LeaveProgress?
    /// How the last `leave` went.
    var departure: Departure?
    /// What this node's problems are listed from, and the problems as listed.
    var healthState: NodeHealth
    var warnings = WarningLimiter()
    var storeReadFailureLogged = false
    /// Identities two processes may have used in this life (`IdentityDoubt`).
    var doubts = IdentityDoubt()
    var clockCheck: ClockCheck
    /// Whether members' heartbeats move the clock (a store that may have forgotten stamps).
    var forgottenStamps: ForgottenStamps
    var counters = ReplicaStatus.Counters()
    /// This incarnation's counter slot totals, committed or queued: increments queued before a
    /// commit add to each other. Cleared when a commit fails (the store is then the truth).
    var counterSlots: [ExactKey: Int] = [:]

    init(
        clock: HybridLogicalClock, clockCheck: ClockCheck, forgottenStamps: ForgottenStamps, membership: Membership,
        own: OwnStream, duties: PeriodicDuties, housekeeping: HousekeepingSchedule, healthState: NodeHealth
    ) {
        self.clock = clock
        self.clockCheck = clockCheck
        self.forgottenStamps = forgottenStamps
        self.membership = membership
        self.own = own
        self.duties = duties
        self.housekeeping = housekeeping
        self.healthState = healthState
    }
}
