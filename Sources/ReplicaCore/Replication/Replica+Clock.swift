import Foundation

/// The actor's side of the clock decisions in `NodeCore+Clock.swift`: it reads the clocks,
/// passes the readings in, and refuses the writes the core says to.
extension Replica {
    /// Judges the clock in the core (`NodeCore.checkClock`); the writes queued meanwhile are
    /// refused if it finds this node's clock skewed.
    func checkClock(now: MonotonicInstant) {
        let readings = NodeCore.ClockReadings(
            now: now, wallMillis: configuration.wallClock(), timing: timing,
            refusedEntriesWindow: max(Self.refusedEntriesWindow, configuration.periodicSyncInterval * 2),
            hasMembersOrSeeds: hasMembersOrSeeds)
        if let error = core.checkClock(readings) { refuse(core.commits.takeWrites()) { _ in error } }
    }

    /// How long after the last refused entry of a member it stays listed for it.
    static let refusedEntriesWindow: Duration = .seconds(10)

    /// Whether this node has anyone to hear (seeds or members): otherwise it is a cluster of one,
    /// whose clock has nothing to be compared with and which is never isolated. Seeds found by
    /// beacon count, and a beacon heard lately (a node that joins by discovery only, whose key
    /// no member trusts, was never listed isolated; then listed and cleared each
    /// time its discovered seed expired).
    var hasMembersOrSeeds: Bool {
        !configuration.peers.isEmpty || !core.membership.active.isEmpty || !sockets.seeding.seeds.isEmpty
            || sockets.seeding.lastBeaconHeard.map { instant() - $0 < SeedRetirement.discoveredLife } ?? false
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
