import Foundation

/// This node's clock against its members': the verdict of `ClockCheck`, the problems it
/// raises, and what changes when the wall clock is stepped.
extension Replica {
    func checkClock(now: ContinuousClock.Instant) {
        var offsets: [Int64] = []
        var measured: [(node: NodeID, offset: Int64)] = []
        var unmeasured = 0
        // Members whose entries were refused lately as stamped too far ahead. Not while this
        // node's own clock is refused: behind, it refuses everyone's, and the fault is its own.
        var refusing: [NodeID: Int64] = [:]
        var newRefusals: [NodeID: Int] = [:]
        if core.clockCheck.refusal == nil {
            let window = max(Self.refusedEntriesWindow, configuration.periodicSyncInterval * 2)
            let acceptedThrough = core.clock.acceptsThrough(wallMillis: configuration.wallClock())
            for session in activeSessions where session.liveness.state != .down {
                if let ahead = session.refusedEntriesAhead(now: now, window: window, acceptedThroughWallMillis: acceptedThrough) {
                    refusing[session.node] = ahead
                    newRefusals[session.node] = core.sessions[session.node]?.takeNewFutureRejections()
                }
            }
        }
        // Members not heard directly now (nor down) keep what was said of their clocks.
        var unheard: Set<NodeID> = []
        for session in activeSessions {
            guard session.hearsDirectly(now: now, base: timing) else {
                if session.liveness.state != .down { unheard.insert(session.node) }
                continue
            }
            if let offset = session.clock.offsetMillis {
                offsets.append(offset)
                measured.append((session.node, offset))
            } else {
                unmeasured += 1
            }
        }
        core.clock.extraDriftMillis = core.clockCheck.allowanceMillis
        // A node with seeds or members has something to compare with, even before it hears them:
        // until it has (or the grace runs out), its clock is unverified and local writes wait.
        if offsets.isEmpty && unmeasured == 0 && hasMembersOrSeeds {
            unmeasured = 1
        }
        let lead = clockLeadRefusal()
        if let verdict = core.clockCheck.evaluate(offsets: offsets, unmeasured: unmeasured, now: now) {
            core.clock.extraDriftMillis = core.clockCheck.allowanceMillis
            if case .skewed(let median) = verdict {
                let error = ReplicaError.clockSkew(offsetMillis: median, limitMillis: core.clockCheck.limitMillis)
                refuse(core.commits.takeWrites()) { _ in error }
            }
        }
        noteClockLead(lead)
        // A member that is down has no clock to judge: what was said of it is stale.
        core.healthState.memberClockFaults = judgeMemberClocks(
            measured, median: core.clockCheck.median(offsets), refusing: refusing, newRefusals: newRefusals,
            keeping: core.healthState.memberClockFaults.filter { unheard.contains($0.key) })
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

    /// The refusal of local writes while this node's hybrid clock is further ahead of its
    /// members' clocks than they accept (`ReplicaError.clockAhead`); nil otherwise. It gets there
    /// only by its own writes with a wall clock ahead (members' entries that far ahead are
    /// refused), and leaves it as the wall clock catches up. The members' clocks are ours plus
    /// their median offset once compared (a clock fixed to within the limit but ahead of theirs
    /// leaves less room than its own reading shows), ours before. A node with nobody to compare
    /// with (no seeds, no members: an app alone on a device whose clock was set back) is not held:
    /// nobody refuses what it stamps, and its clock stays monotonic.
    func clockLeadRefusal() -> ReplicaError? {
        guard hasMembersOrSeeds else { return nil }
        let limit = Int64(clamping: core.clock.maxDriftMillis)
        let members = Int64(clamping: configuration.wallClock()) + core.clockCheck.agreedMedianMillis
        let lead = Int64(clamping: core.clock.last.wallMillis) - members
        return lead > limit ? .clockAhead(leadMillis: lead, limitMillis: limit) : nil
    }

    /// Keeps the lead for the `clock` problem whether or not anything is written (what this node
    /// wrote meanwhile waits, refused by every member) until the wall clock caught up. A skewed
    /// clock's message wins (fixing the clock comes first); the lead is kept as first described
    /// (its figures would change every second).
    func noteClockLead(_ refusal: ReplicaError?) {
        if core.clockCheck.refusal != nil || refusal == nil {
            core.healthState.clockLead = nil
        } else if core.healthState.clockLead == nil {
            core.healthState.clockLead = refusal
        }
    }

    /// How a `peerClock` message for refused entries begins.
    static let refusedEntriesPrefix = "entries written by"

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

    /// The members whose clocks are off, as `peerClock` problems, once this node's own clock has
    /// been judged (a member behind ours but with the median is not the wrong one); `kept`, of
    /// members not heard directly now, stand as they were.
    private func judgeMemberClocks(_ measured: [(node: NodeID, offset: Int64)], median: Int64?, refusing: [NodeID: Int64],
                                   newRefusals: [NodeID: Int], keeping kept: [NodeID: ProblemFact]) -> [NodeID: ProblemFact] {
        var faults = kept
        let judgedOff = Set(measured.filter { core.clockCheck.judge(memberOffset: $0.offset, median: median) != .fine }.map(\.node))
        for (node, ahead) in refusing where !judgedOff.contains(node) {
            // Its clock may look right now (fixed), but what it writes is still stamped ahead:
            // said (instead of what was said of its clock) until this clock takes them, or none
            // has been refused for a while. Each check that saw new refusals is one more
            // occurrence.
            if var listed = core.healthState.memberClockFaults[node], listed.message.hasPrefix(Self.refusedEntriesPrefix) {
                if newRefusals[node] ?? 0 > 0 { listed.occurrences = (listed.occurrences ?? 1) + 1 }
                faults[node] = listed
                continue
            }
            faults[node] = ProblemFact("\(Self.refusedEntriesPrefix) \(node) are stamped \(ahead / 1000) s ahead of "
                + "this node's clock, beyond the \(core.clockCheck.limitMillis / 1000) s limit, and refused here: it wrote them while its "
                + "clock was ahead. They are taken once this clock is within \(core.clockCheck.limitMillis / 1000) s of them, at the next "
                + "sync (and then win over later writes to the same keys)", occurrences: 1)
        }
        for (node, offset) in measured {
            let subject = node.rawValue
            let message: String
            switch core.clockCheck.judge(memberOffset: offset, median: median) {
            case .fine:
                continue
            case .ahead:
                message = "\(subject)'s clock is \(offset / 1000) s ahead of this node's; entries it writes are refused here while so"
            case .behind:
                message = "\(subject)'s clock is \(-offset / 1000) s behind this node's and its other members'; it refuses its own writes while so"
            }
            // Each check that finds it off is one more occurrence.
            faults[node] = ProblemFact(message, occurrences: (core.healthState.memberClockFaults[node]?.occurrences ?? 0) + 1)
        }
        return faults
    }

    /// While the store may lack stamps of its own (`ForgottenStamps`): takes again the heartbeat
    /// timestamps its clock refused, now that the clock check may allow a clock behind its
    /// members' further (right after the check, before a turn releases the writes it held), and
    /// ends once every active member's was taken.
    ///
    /// It also stamps no lower than its members' median clock while that is ahead of its own:
    /// the member it reached may never have had the old write (it was down then), and a wiped
    /// node 20 s behind stamped its new write from its own clock, below its write of a minute
    /// before the wipe that the member holding it brought back. The median is a
    /// checked time (within the drift limit), not one member's clock.
    func retakeForgottenStamps() {
        guard core.forgottenStamps.takesHeartbeatClocks else { return }
        let wall = configuration.wallClock()
        for (node, timestamp) in core.forgottenStamps.refused where (try? core.clock.receive(timestamp, wallMillis: wall)) != nil {
            core.forgottenStamps.took(from: node)
        }
        // Not over before the clock check has judged: the median is taken then.
        guard case .agrees(let median) = core.clockCheck.verdict else { return }
        if median > 0 {
            _ = try? core.clock.receive(HybridTimestamp(wallMillis: wall + UInt64(median), logical: 0), wallMillis: wall)
        }
        core.forgottenStamps.settle(active: activeSessions.map(\.node))
    }

    /// The wall clock moved differently from the monotonic clock (stepped by an operator or
    /// NTP): offsets measured before are void, so a fixed clock is trusted again within a few
    /// heartbeats instead of after every old sample has aged out.
    ///
    /// Looked at every turn, before the turn's commit (two clock reads), not with the rest of the
    /// clock check every 10 ms: a step found is judged at once (`checkClock`), so that no write of
    /// that turn is stamped by a clock just stepped before the members' clocks are measured again.
    func noticeClockStep() {
        // Both clocks read together: a step shows as their difference, not as a turn's length.
        let (wall, now) = (configuration.wallClock(), instant())
        defer { core.lastClockReading = (wall, now) }
        guard let (lastWall, lastNow) = core.lastClockReading else { return }
        let wallElapsed = Int64(bitPattern: wall &- lastWall)
        let elapsed = Int64((now - lastNow) / .milliseconds(1))
        guard abs(wallElapsed - elapsed) > 1000 else { return }
        logger.warning("the wall clock was stepped by \(wallElapsed - elapsed) ms; measuring the members' clocks afresh")
        for node in core.sessions.keys { core.sessions[node]?.resetClock(wallMillis: wall) }
        core.clockCheck.clockStepped(now: now)
        checkClock(now: now)
        core.housekeeping.runSoon()
    }
}
