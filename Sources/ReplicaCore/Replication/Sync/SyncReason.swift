/// Why a full anti-entropy sync is wanted. Every trigger is one case (docs/operations.md lists
/// them); the order of the cases is their priority when several wait.
enum SyncReason: String, Sendable, Comparable, CaseIterable {
    /// Just started: whatever the cluster wrote meanwhile.
    case startUp = "start-up"
    /// The member restarted: what it published late in its last life may not have reached us.
    case peerRestarted = "peer restarted"
    /// The member's data directory was replaced.
    case newIncarnation = "new incarnation"
    /// Lost updates of a member that is no longer buffered (or cannot be reached) for repair.
    case repairUnavailable = "lost updates no longer buffered"
    /// A repair got no answer in time.
    case repairTimedOut = "repair timed out"
    /// A member joined (or became trusted): it may hold data of its own.
    case memberJoined = "member joined"
    /// A member we hear holds updates of an origin we cannot hear that we lack.
    case behindMember = "a member holds updates we lack"
    /// Received entries could not be committed (full disk): fetch them again.
    case commitFailed = "a commit failed"
    /// Both digests stayed unchanged for a heartbeat and still differ.
    case digestsDiffer = "digests differ while both are quiet"
    /// Every `periodicSyncInterval`, whatever else happened.
    case periodic = "periodic check"

    static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Any member that holds the data serves it: these are best served by the member that has
    /// the most, one sync for the whole difference, not one per member. (After a healed
    /// partition every member's losses show at once: one catch-up replaces a sync per member, and
    /// the repairs that would fetch the same updates again.)
    var isCatchUp: Bool {
        switch self {
        case .startUp, .repairUnavailable, .repairTimedOut, .behindMember, .commitFailed: true
        default: false
        }
    }
}
