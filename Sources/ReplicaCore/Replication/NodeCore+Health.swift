/// Health decisions in the core: whether this node's clock is a problem, and whether it is
/// isolated (its members unheard, or none hearing it).
extension NodeCore {
    /// The `clock` problem, from the clock check's state: a clock beyond the limit from the
    /// members' median; one never compared while the configuration requires it
    /// (`requiringCheck`: failing health from the start, while writes wait for the comparison,
    /// then while they are refused); a hybrid clock further ahead than members accept.
    func ownClockProblem(now: MonotonicInstant, requiringCheck: Bool) -> String? {
        if let skew = clockCheck.refusal {
            return Self.clockProblemMessage(.clockSkew(offsetMillis: skew, limitMillis: clockCheck.limitMillis))
        }
        if requiringCheck && !clockCheck.hasAgreed && clockCheck.verdict == .unverified {
            return clockCheck.isUnchecked(now: now)
                ? ReplicaError.clockUnchecked.description
                : "this node's clock has not been compared with any member's yet, and it requires that check: writes wait for the "
                    + "first comparison, for at most \(clockCheck.grace), and are refused after that until a member is reached"
        }
        return healthState.clockLead?.description
    }

    /// The `clock` problem's message for a refusal: a clock behind also refuses what the members
    /// write (it looks stamped in the future), so reads on this node are stale meanwhile.
    static func clockProblemMessage(_ error: ReplicaError) -> String {
        guard case .clockSkew(let median, _) = error, median > 0 else { return error.description }
        return error.description + "; entries the members write look too far ahead and are refused here too, so reads on this node are stale"
    }

    /// Judges whether this node (`local`) is isolated: it has heard no member for
    /// `Isolation.limit`, or has heard members none of which reports hearing it.
    mutating func judgeIsolation(
        now: MonotonicInstant, local: NodeID, suspectAfter: Duration, hasMembersOrSeeds: Bool, requiringCheck: Bool
    ) {
        let active = activeSessions
        let anyMemberAlive = active.contains { $0.liveness.state == .alive }
        guard healthState.isolation.update(anyMemberAlive: anyMemberAlive, hasMembersOrSeeds: hasMembersOrSeeds, now: now) == nil else { return }
        // Only the reports of members alive now, in a recent heartbeat: a member that left or died
        // keeps its last report. While this node's clock is refused (the `clock` problem), the
        // members' heartbeats look skewed and are not read: that problem says what is wrong.
        // (Judged only when members are heard at all: see `Isolation.unheard`.)
        let hearsUs = anyMemberAlive && (ownClockProblem(now: now, requiringCheck: requiringCheck) != nil || active.contains { session in
            guard session.liveness.state == .alive, let heartbeat = session.heartbeat,
                  now - heartbeat.receivedAt < suspectAfter else { return false }
            return heartbeat.reports[local]?.hearsDirectly == true
        })
        _ = healthState.isolation.unheard(anyMemberAlive: anyMemberAlive, anyMemberHearsUs: hearsUs, now: now)
    }
}
