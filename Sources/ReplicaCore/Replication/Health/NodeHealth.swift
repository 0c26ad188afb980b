/// The state this node's problems are listed from (`NodeCore.listProblems`), apart from what
/// the commit queue, the clock check and the members' sessions hold: the checks of isolation,
/// identity and absence, what the program reports, trust faults, and the problems as listed.
struct NodeHealth: Sendable {
    /// Every problem as last listed (with since when), for `status` and `health`.
    var problems = ProblemBoard()
    /// Load errors and refused saves the program reports (`Sharing/Replica+Problems.swift`).
    var reports = ProgramReports()
    /// This node's hybrid clock is too far ahead of its members' (`clockLeadRefusal`), as first
    /// found: the `clock` problem says so until it is not.
    var clockLead: ReplicaError?
    /// The members' clocks that are off, or whose entries are refused as stamped ahead, as the
    /// last clock check judged them (`peerClock`).
    var memberClockFaults: [NodeID: ProblemFact] = [:]
    var isolation: Isolation
    /// Whether another process uses our id (local writes refused meanwhile).
    var identityClash: IdentityClash
    /// Members whose id two processes seem to use.
    var memberClash: MemberIdentityClash
    /// Trust sources that cannot be used, and impersonations members pass on.
    var trustFaults = TrustFaults()
    /// Whether this node returns from longer out of contact than the tombstone retention.
    var absence: AbsenceCheck
    /// The database file no longer where the node opened it, as last checked.
    var misplacedStoreFile: (path: String, message: String)?

    /// The windows follow the down time: isolated after twice it; a clash lasts long enough
    /// that the rival's next re-assertion (a round of gossip) falls inside it, and a member's
    /// three times that (four moves, each one round of re-assertions).
    init(downAfter: Duration, absence: AbsenceCheck) {
        isolation = Isolation(limit: downAfter * 2)
        identityClash = IdentityClash(window: max(downAfter * 2, .seconds(10)), confirmAfter: downAfter)
        memberClash = MemberIdentityClash(window: identityClash.window * 3)
        self.absence = absence
    }
}
