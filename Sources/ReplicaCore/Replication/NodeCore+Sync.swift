/// Which sync to start: the candidates the `SyncPlanner` chooses among (reachable members with
/// a link, whether each holds what we know we miss, how far each has got), the request it
/// names, and when a wanted catch-up has waited long enough without a member to say so.
extension NodeCore {
    /// A sync chosen: the member, why, and what its request names and covers by.
    struct SyncChoice: Equatable {
        var peer: NodeID
        var reason: SyncReason
        var requestID: UInt64
        var since: StoreMark
        var reports: [NodeID: PeerReport]
        var reportsEpoch: UInt64
    }

    enum SyncDecision: Equatable {
        case start(SyncChoice)
        /// Nothing to start; `waiting` says why a wanted catch-up has waited `catchUpPatience`.
        case none(waiting: String?)
    }

    /// The sync to start now, if any: while the store fails, only once the fetch's back-off
    /// has passed (what a sync brought would only fail again). `isLinked`: the member has a
    /// link to send on.
    mutating func chooseSync(
        now: MonotonicInstant, base: PeerTiming, catchUpPatience: Duration, isLinked: (NodeID) -> Bool
    ) -> SyncDecision {
        guard commits.acceptsSyncs(now: now) else { return .none(waiting: nil) }
        let active = activeSessions
        let lossy = active.filter { !$0.stream.missing.isEmpty }
        let candidates = active.filter { isLinked($0.node) }.map { session in
            SyncPlanner.Candidate(
                node: session.node,
                // Heard directly, or its sync connection just came back (a healed partition: the
                // sync need not wait for the next heartbeat).
                reachable: session.dealer.isConnected && (session.hearsDirectly(now: now, base: base)
                    || session.dealer.connectedRecently(now: now, window: session.timing(base).suspectAfter)),
                coversMissing: Self.covers(lossy, session),
                progress: (session.heartbeat?.reports.values.reduce(0) { $0 &+ $1.through } ?? 0) &+ (session.heartbeat?.sequence ?? 0))
        }
        // A catch-up waits (at most a second) while queued updates are still being read.
        let deferCatchUp = intakeBusySince.map { now - $0 < .seconds(1) } ?? false
        guard let (node, reason) = planner.next(candidates, deferCatchUp: deferCatchUp), isLinked(node), let session = sessions[node] else {
            // Said only once it has waited a while: right after start, or while a link comes
            // back, nobody is reachable for a moment, and that is normal.
            if planner.catchUp != nil, planner.inFlight == nil, !candidates.isEmpty, !deferCatchUp {
                catchUpUnservedSince = catchUpUnservedSince ?? now
            } else {
                catchUpUnservedSince = nil
            }
            guard let catchUp = planner.catchUp, let since = catchUpUnservedSince, now - since >= catchUpPatience else { return .none(waiting: nil) }
            let members = candidates.map { "\($0.node): \($0.reachable ? "reachable" : "unreachable")" }.joined(separator: ", ")
            return .none(waiting: "a catch-up sync (\(catchUp.reason.rawValue)) waits: no member can serve it now "
                + "(\(members)\(deferCatchUp ? ", intake busy" : ""))")
        }
        catchUpUnservedSince = nil
        // A sync abandoned for a slow chunk is asked again as it was: the member leaves out
        // what it already sent for it (see `SyncPlanner.Retry`).
        let retry = planner.retrying(with: node, since: session.syncMark)
        let requestID = retry?.requestID ?? nextRequestID
        if retry == nil { nextRequestID += 1 }
        return .start(SyncChoice(
            peer: node, reason: reason, requestID: requestID, since: session.syncMark,
            reports: retry?.reports ?? session.heartbeat?.reports ?? [:], reportsEpoch: retry?.reportsEpoch ?? session.heartbeat?.epoch ?? 0))
    }

    /// The chosen sync's request went out.
    mutating func syncSent(_ choice: SyncChoice, now: MonotonicInstant) {
        planner.started(
            with: choice.peer, requestID: choice.requestID, reason: choice.reason, reports: choice.reports,
            reportsEpoch: choice.reportsEpoch, since: choice.since, now: now)
        commits.syncStarted()
    }

    /// Whether `session`'s member holds every update we know we are missing (the streams of
    /// `lossy`), by its reports.
    static func covers(_ lossy: [PeerSession], _ session: PeerSession) -> Bool {
        guard let reports = session.heartbeat?.reports else { return false }
        for other in lossy where other.node != session.node {
            guard let report = reports[other.node], report.epoch == other.stream.epoch,
                  report.through >= other.stream.through
            else { return false }
        }
        return true
    }

    /// A sync brought everything its member held when it took the request: the losses it covers
    /// (by its reports from before the request) are no longer gaps, though what we dropped
    /// ourselves stays lost until its own member's word. After a catch-up, losses of members we
    /// cannot reach that it did not cover are given up: nobody reachable holds them (they come
    /// back with those members). Entries dropped meanwhile: the sync counts, but no mark or
    /// stream is covered by it (the next sync asks for everything in the differing buckets).
    mutating func syncCompleted(_ sync: SyncPlanner.InFlight, mark: StoreMark, sequence: UInt64, now: MonotonicInstant, base: PeerTiming) {
        let node = sync.peer
        sessions[node]?.syncCompleted(
            mark: sync.droppedEntries ? .none : mark, sequence: sync.droppedEntries ? 0 : sequence, askedInFull: sync.since == .none)
        let reports = SyncPlanner.coveringReports(of: sync, markEpoch: mark.epoch)
        for origin in sessions.keys where origin != node {
            if let report = reports[origin] { sessions[origin]?.coveredByReport(through: report.through, epoch: report.epoch) }
        }
        if sync.reason.isCatchUp { catchUpSettled(now: now, base: base, except: node) }
    }

    /// A heartbeat of `node` showed our own digest: equal state, so what it holds of each stream,
    /// we hold too (its own by its word; the others' as far as a report covers).
    mutating func digestsEqual(_ heartbeat: Heartbeat, from node: NodeID, local: NodeID, now: MonotonicInstant, base: PeerTiming) {
        sessions[node]?.covered(through: heartbeat.sequence, epoch: heartbeat.epoch)
        if planner.digestsAgree(with: node) != nil { catchUpSettled(now: now, base: base, except: node) }
        for report in heartbeat.reports where report.node != local && report.node != node {
            sessions[report.node]?.coveredByReport(through: report.through, epoch: report.epoch)
        }
    }

    /// A catch-up is over (completed, or its member showed our own digest): losses of members
    /// we cannot reach that it did not cover are given up, since nobody reachable holds them
    /// (they come back with those members).
    mutating func catchUpSettled(now: MonotonicInstant, base: PeerTiming, except node: NodeID? = nil) {
        for origin in sessions.keys where origin != node {
            if let session = sessions[origin], !session.hearsDirectly(now: now, base: base) {
                sessions[origin]?.giveUpLosses()
            }
        }
    }
}
