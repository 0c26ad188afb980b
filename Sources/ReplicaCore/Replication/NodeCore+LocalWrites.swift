/// The one decision about local writes, for a whole batch at one instant, in the core: refused
/// while the node leaves or has left, while another process uses its id, while its clock is
/// skewed, never compared under `requireClockCheck`, or its hybrid clock is further ahead than
/// members accept; held while the first clock comparison is awaited (at most the grace);
/// accepted otherwise.
extension NodeCore {
    enum LocalWrites: Equatable, Sendable {
        case accept
        case hold
        case refuse(ReplicaError)
    }

    /// `requiringCheck`: `requireClockCheck`; `hasMembersOrSeeds`: someone to compare with.
    mutating func localWrites(
        now: MonotonicInstant, wallMillis: UInt64, requiringCheck: Bool, hasMembersOrSeeds: Bool
    ) -> LocalWrites {
        // Writes still queued once the node leaves (held for the first clock comparison when
        // `leave` began): committed after the departure, they were acknowledged and reached no
        // member.
        if leaving != nil || membership.local.status != .active { return .refuse(.leaving) }
        if let rival = healthState.identityClash.rival { return .refuse(.identityClash(evidence: Replica.clashEvidence(rival))) }
        switch clockCheck.localWrites(now: now, requiringCheck: requiringCheck) {
        case .hold: return .hold
        case .accept:
            // Judged once the clock check lets writes through: the allowance it sets counts.
            guard let lead = clockLeadRefusal(wallMillis: wallMillis, hasMembersOrSeeds: hasMembersOrSeeds) else { return .accept }
            noteClockLead(lead)
            return .refuse(lead)
        case .refuseSkewed(let median): return .refuse(.clockSkew(offsetMillis: median, limitMillis: clockCheck.limitMillis))
        case .refuseUnchecked: return .refuse(.clockUnchecked)
        }
    }
}
