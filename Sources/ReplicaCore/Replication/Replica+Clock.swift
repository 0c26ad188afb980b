import Foundation

/// This node's clock against its members': the verdict of `ClockCheck`, the problems it
/// raises, and what changes when the wall clock is stepped.
extension Replica {
    /// Judges the clock in the core (`NodeCore.checkClock`); the writes queued meanwhile are
    /// refused if it finds this node's clock skewed.
    func checkClock(now: ContinuousClock.Instant) {
        let readings = NodeCore.ClockReadings(
            now: now, wallMillis: configuration.wallClock(), timing: timing,
            refusedEntriesWindow: max(Self.refusedEntriesWindow, configuration.periodicSyncInterval * 2),
            hasMembersOrSeeds: hasMembersOrSeeds)
        if let error = core.checkClock(readings) { refuse(core.commits.takeWrites()) { _ in error } }
    }

    /// The `clock` problem, from the clock check's state: a clock beyond the limit from the
    /// members' median; one never compared while the configuration requires it (failing health
    /// from the start, while writes wait for the comparison, then while they are refused); a
    /// hybrid clock further ahead than members accept.
    func ownClockProblem(now: ContinuousClock.Instant) -> String? {
        if let skew = core.clockCheck.refusal {
            return clockProblemMessage(.clockSkew(offsetMillis: skew, limitMillis: core.clockCheck.limitMillis))
        }
        if configuration.requireClockCheck && !core.clockCheck.hasAgreed && core.clockCheck.verdict == .unverified {
            return core.clockCheck.isUnchecked(now: now) ? ReplicaError.clockUnchecked.description : clockNotComparedYet
        }
        return core.healthState.clockLead?.description
    }

    /// The `clock` problem of a node that requires a clock check, before its first comparison
    /// and while its writes still wait for one.
    var clockNotComparedYet: String {
        "this node's clock has not been compared with any member's yet, and it requires that check: writes wait for the first "
            + "comparison, for at most \(core.clockCheck.grace), and are refused after that until a member is reached"
    }

    /// How long after the last refused entry of a member it stays listed for it.
    static let refusedEntriesWindow: Duration = .seconds(10)

    /// Whether this node has anyone to hear (seeds or members): otherwise it is a cluster of one,
    /// whose clock has nothing to be compared with and which is never isolated. Seeds found by
    /// beacon count, and a beacon heard lately (a node that joins by discovery only, whose key
    /// no member trusts, was never listed isolated; then listed and cleared each
    /// time its discovered seed expired).
    var hasMembersOrSeeds: Bool {
        !configuration.peers.isEmpty || !core.membership.active.isEmpty || !seeding.seeds.isEmpty
            || seeding.lastBeaconHeard.map { instant() - $0 < SeedRetirement.discoveredLife } ?? false
    }

    /// The hybrid clock's lead over the members', as local writes meet it now.
    func clockLeadRefusal() -> ReplicaError? {
        core.clockLeadRefusal(wallMillis: configuration.wallClock(), hasMembersOrSeeds: hasMembersOrSeeds)
    }

    /// Heartbeat stamps the clock refused, taken again after the check (`NodeCore.retakeForgottenStamps`).
    func retakeForgottenStamps() {
        core.retakeForgottenStamps(wallMillis: configuration.wallClock())
    }

    /// A step of the wall clock, looked at every turn, before the turn's commit (two clock
    /// reads), not with the rest of the clock check every 10 ms: a step found is judged at once,
    /// so that no write of that turn is stamped by a clock just stepped before the members'
    /// clocks are measured again.
    func noticeClockStep() {
        // Both clocks read together: a step shows as their difference, not as a turn's length.
        let (wall, now) = (configuration.wallClock(), instant())
        guard let step = core.noticeClockStep(wallMillis: wall, now: now) else { return }
        logger.warning("the wall clock was stepped by \(step) ms; measuring the members' clocks afresh")
        checkClock(now: now)
    }
}
