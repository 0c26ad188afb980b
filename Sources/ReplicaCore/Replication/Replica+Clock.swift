import Foundation

/// This node's clock against its members': the verdict of `ClockCheck`, the problems it
/// raises, and what changes when the wall clock is stepped.
extension Replica {
    func checkClock(now: ContinuousClock.Instant) {
        // Both clocks read together: a step shows as their difference, not as a turn's length.
        noticeClockStep(wall: configuration.wallClock(), now: .now)
        var offsets: [Int64] = []
        var measured: [(node: NodeID, offset: Int64)] = []
        var unmeasured = 0
        for session in activeSessions where session.hearsDirectly(now: now, base: timing) {
            if let offset = session.clock.offsetMillis {
                offsets.append(offset)
                measured.append((session.node, offset))
            } else {
                unmeasured += 1
                problems.clear(.peerClock, session.node.rawValue)
            }
        }
        clock.extraDriftMillis = clockCheck.allowanceMillis
        // A node with seeds or members has something to compare with, even before it hears them:
        // until it has (or the grace runs out), its clock is unverified and local writes wait.
        if offsets.isEmpty && unmeasured == 0 && hasMembersOrSeeds {
            unmeasured = 1
        }
        if let verdict = clockCheck.evaluate(offsets: offsets, unmeasured: unmeasured, now: now) {
            clock.extraDriftMillis = clockCheck.allowanceMillis
            switch verdict {
            case .skewed(let median):
                let error = ReplicaError.clockSkew(offsetMillis: median, limitMillis: clockCheck.limitMillis)
                problems.raise(.clock, identity.node.rawValue, clockProblemMessage(error))
                logger.error("\(error.description)")
                refuse(commits.takeWrites()) { _ in error }
            case .agrees, .alone, .unverified:
                if problems.clear(.clock, identity.node.rawValue) != nil {
                    logger.info("this node's clock agrees with its members' again; writes are accepted")
                }
            }
        }
        judgeMemberClocks(measured, median: ClockCheck.median(offsets))
        // A member that is down has no clock to judge: what was said of it is stale (it stayed
        // listed, its last time after the member's last heartbeat).
        for session in activeSessions where session.liveness.state == .down {
            problems.clear(.peerClock, session.node.rawValue)
        }
        // A node that refuses writes for want of a first comparison fails health from then on,
        // written to or not (cleared once its clock agrees: the verdict changes above).
        if configuration.requireClockCheck && clockCheck.isUnchecked(now: now),
           problems.describe(.clock, identity.node.rawValue, ReplicaError.clockUnchecked.description) {
            logger.error("\(ReplicaError.clockUnchecked.description)")
        }
    }

    /// Whether this node has anyone to hear (seeds or members): otherwise it is a cluster of one,
    /// whose clock has nothing to be compared with and which is never isolated.
    var hasMembersOrSeeds: Bool { !configuration.peers.isEmpty || !membership.active.isEmpty }

    /// Lists the members whose clocks are off as `peerClock` problems, once this node's own
    /// clock has been judged (a member behind ours but with the median is not the wrong one).
    private func judgeMemberClocks(_ measured: [(node: NodeID, offset: Int64)], median: Int64?) {
        for (node, offset) in measured {
            let subject = node.rawValue
            let message: String
            switch clockCheck.judge(memberOffset: offset, median: median) {
            case .fine:
                problems.clear(.peerClock, subject)
                continue
            case .ahead:
                message = "\(subject)'s clock is \(offset / 1000) s ahead of this node's; entries it writes are refused here while so"
            case .behind:
                message = "\(subject)'s clock is \(-offset / 1000) s behind this node's and its other members'; it refuses its own writes while so"
            }
            if problems.raise(.peerClock, subject, message) {
                logger.warning("\(subject)'s clock is \(offset) ms off ours, beyond the \(clockCheck.limitMillis) ms limit")
            }
        }
    }

    /// The wall clock moved differently from the monotonic clock (stepped by an operator or
    /// NTP): offsets measured before are void, so a fixed clock is trusted again within a few
    /// heartbeats instead of after every old sample has aged out.
    private func noticeClockStep(wall: UInt64, now: ContinuousClock.Instant) {
        defer { lastClockReading = (wall, now) }
        guard let (lastWall, lastNow) = lastClockReading else { return }
        let wallElapsed = Int64(bitPattern: wall &- lastWall)
        let elapsed = Int64((now - lastNow) / .milliseconds(1))
        guard abs(wallElapsed - elapsed) > 1000 else { return }
        logger.warning("the wall clock was stepped by \(wallElapsed - elapsed) ms; measuring the members' clocks afresh")
        for node in sessions.keys { sessions[node]?.resetClock() }
    }
}
