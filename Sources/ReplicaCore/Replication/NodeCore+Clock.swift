/// This node's clock against its members', decided in the core: the clock check's verdict from
/// the members' measured offsets, the hybrid clock's lead, the members' clocks judged
/// (`peerClock`), heartbeat stamps taken again, and a step of the wall clock. The actor passes
/// in what it reads (the time, the wall clock) and carries out what comes back.
extension NodeCore {
    /// What the clock judgement reads beyond the core's own state.
    struct ClockReadings {
        var now: MonotonicInstant
        var wallMillis: UInt64
        var timing: PeerTiming
        /// How long after a member's last refused entry it stays listed for it.
        var refusedEntriesWindow: Duration
        /// Seeds or members to compare with (`Replica.hasMembersOrSeeds`).
        var hasMembersOrSeeds: Bool
    }

    /// The sessions of active members: what the clock check, isolation and the timers look at.
    var activeSessions: [PeerSession] { membership.active.compactMap { sessions[$0.node] } }

    /// Judges this node's clock and its members'. Returns the error that the local writes now
    /// queued are refused with, when the verdict just became skewed.
    mutating func checkClock(_ readings: ClockReadings) -> ReplicaError? {
        let now = readings.now
        var offsets: [Int64] = []
        var measured: [(node: NodeID, offset: Int64)] = []
        var unmeasured = 0
        // Members whose entries were refused lately as stamped too far ahead. Not while this
        // node's own clock is refused: behind, it refuses everyone's, and the fault is its own.
        var refusing: [NodeID: Int64] = [:]
        var newRefusals: [NodeID: Int] = [:]
        let active = activeSessions
        if clockCheck.refusal == nil {
            let acceptedThrough = clock.acceptsThrough(wallMillis: readings.wallMillis)
            for session in active where session.liveness.state != .down {
                if let ahead = session.refusedEntriesAhead(now: now, window: readings.refusedEntriesWindow, acceptedThroughWallMillis: acceptedThrough) {
                    refusing[session.node] = ahead
                    newRefusals[session.node] = sessions[session.node]?.takeNewFutureRejections()
                }
            }
        }
        // Members not heard directly now (nor down) keep what was said of their clocks.
        var unheard: Set<NodeID> = []
        for session in active {
            guard session.hearsDirectly(now: now, base: readings.timing) else {
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
        clock.extraDriftMillis = clockCheck.allowanceMillis
        // A node with seeds or members has something to compare with, even before it hears them:
        // until it has (or the grace runs out), its clock is unverified and local writes wait.
        if offsets.isEmpty && unmeasured == 0 && readings.hasMembersOrSeeds {
            unmeasured = 1
        }
        let lead = clockLeadRefusal(wallMillis: readings.wallMillis, hasMembersOrSeeds: readings.hasMembersOrSeeds)
        var refusal: ReplicaError?
        if let verdict = clockCheck.evaluate(offsets: offsets, unmeasured: unmeasured, now: now) {
            clock.extraDriftMillis = clockCheck.allowanceMillis
            if case .skewed(let median) = verdict {
                refusal = .clockSkew(offsetMillis: median, limitMillis: clockCheck.limitMillis)
            }
        }
        noteClockLead(lead)
        // A member that is down has no clock to judge: what was said of it is stale.
        healthState.memberClockFaults = Self.judgeMemberClocks(
            measured, median: clockCheck.median(offsets), refusing: refusing, newRefusals: newRefusals, check: clockCheck,
            listed: healthState.memberClockFaults, keeping: unheard)
        return refusal
    }

    /// The refusal of local writes while this node's hybrid clock is further ahead of its
    /// members' clocks than they accept (`ReplicaError.clockAhead`); nil otherwise. It gets there
    /// only by its own writes with a wall clock ahead (members' entries that far ahead are
    /// refused), and leaves it as the wall clock catches up. The members' clocks are ours plus
    /// their median offset once compared (a clock fixed to within the limit but ahead of theirs
    /// leaves less room than its own reading shows), ours before. A node with nobody to compare
    /// with (no seeds, no members: an app alone on a device whose clock was set back) is not held:
    /// nobody refuses what it stamps, and its clock stays monotonic.
    func clockLeadRefusal(wallMillis: UInt64, hasMembersOrSeeds: Bool) -> ReplicaError? {
        guard hasMembersOrSeeds else { return nil }
        let limit = Int64(clamping: clock.maxDriftMillis)
        let members = Int64(clamping: wallMillis) + clockCheck.agreedMedianMillis
        let lead = Int64(clamping: clock.last.wallMillis) - members
        return lead > limit ? .clockAhead(leadMillis: lead, limitMillis: limit) : nil
    }

    /// Keeps the lead for the `clock` problem whether or not anything is written (what this node
    /// wrote meanwhile waits, refused by every member) until the wall clock caught up. A skewed
    /// clock's message wins (fixing the clock comes first); the lead is kept as first described
    /// (its figures would change every second).
    mutating func noteClockLead(_ refusal: ReplicaError?) {
        if clockCheck.refusal != nil || refusal == nil {
            healthState.clockLead = nil
        } else if healthState.clockLead == nil {
            healthState.clockLead = refusal
        }
    }

    /// How a `peerClock` message for refused entries begins.
    static let refusedEntriesPrefix = "entries written by"

    /// The members whose clocks are off, as `peerClock` problems, once this node's own clock has
    /// been judged (a member behind ours but with the median is not the wrong one). What is
    /// `listed` of members in `kept` (not heard directly now) stands as it was.
    static func judgeMemberClocks(
        _ measured: [(node: NodeID, offset: Int64)], median: Int64?, refusing: [NodeID: Int64], newRefusals: [NodeID: Int],
        check: ClockCheck, listed: [NodeID: ProblemFact], keeping kept: Set<NodeID>
    ) -> [NodeID: ProblemFact] {
        var faults = listed.filter { kept.contains($0.key) }
        let limit = check.limitMillis / 1000
        let judgedOff = Set(measured.filter { check.judge(memberOffset: $0.offset, median: median) != .fine }.map(\.node))
        for (node, ahead) in refusing where !judgedOff.contains(node) {
            // Its clock may look right now (fixed), but what it writes is still stamped ahead:
            // said (instead of what was said of its clock) until this clock takes them, or none
            // has been refused for a while. Each check that saw new refusals is one more
            // occurrence.
            if var fact = listed[node], fact.message.hasPrefix(refusedEntriesPrefix) {
                if newRefusals[node] ?? 0 > 0 { fact.occurrences = (fact.occurrences ?? 1) + 1 }
                faults[node] = fact
                continue
            }
            faults[node] = ProblemFact("\(refusedEntriesPrefix) \(node) are stamped \(ahead / 1000) s ahead of this node's clock, "
                + "beyond the \(limit) s limit, and refused here: it wrote them while its clock was ahead. They are taken once this "
                + "clock is within \(limit) s of them, at the next sync (and then win over later writes to the same keys)", occurrences: 1)
        }
        for (node, offset) in measured {
            let message: String
            switch check.judge(memberOffset: offset, median: median) {
            case .fine:
                continue
            case .ahead:
                message = "\(node)'s clock is \(offset / 1000) s ahead of this node's; entries it writes are refused here while so"
            case .behind:
                message = "\(node)'s clock is \(-offset / 1000) s behind this node's and its other members'; it refuses its own writes while so"
            }
            // Each check that finds it off is one more occurrence.
            faults[node] = ProblemFact(message, occurrences: (listed[node]?.occurrences ?? 0) + 1)
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
    mutating func retakeForgottenStamps(wallMillis wall: UInt64) {
        guard forgottenStamps.takesHeartbeatClocks else { return }
        for (node, timestamp) in forgottenStamps.refused where (try? clock.receive(timestamp, wallMillis: wall)) != nil {
            forgottenStamps.took(from: node)
        }
        // Not over before the clock check has judged: the median is taken then.
        guard case .agrees(let median) = clockCheck.verdict else { return }
        if median > 0 {
            _ = try? clock.receive(HybridTimestamp(wallMillis: wall + UInt64(median), logical: 0), wallMillis: wall)
        }
        forgottenStamps.settle(active: activeSessions.map(\.node))
    }

    /// Reads the wall and monotonic clocks taken together; returns how far the wall clock was
    /// stepped (ms) if it moved more than a second differently from the monotonic one (an
    /// operator or NTP set it). Offsets measured before a step are void: every member's clock is
    /// measured afresh and the check starts over, so a fixed clock is trusted again within a few
    /// heartbeats instead of after every old sample has aged out.
    mutating func noticeClockStep(wallMillis wall: UInt64, now: MonotonicInstant) -> Int64? {
        defer { lastClockReading = (wall, now) }
        guard let (lastWall, lastNow) = lastClockReading else { return nil }
        let step = Int64(bitPattern: wall &- lastWall) - Int64((now - lastNow) / .milliseconds(1))
        guard abs(step) > 1000 else { return nil }
        for node in sessions.keys { sessions[node]?.resetClock(wallMillis: wall) }
        clockCheck.clockStepped(now: now)
        housekeeping.runSoon()
        return step
    }
}
