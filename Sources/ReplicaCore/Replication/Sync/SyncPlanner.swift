/// Decides which full anti-entropy sync this node runs, and when: one at a time.
///
/// A node that fell behind (a pause, a partition, a restart) would otherwise pull the same
/// difference from every member at once: N copies of what it missed. Here syncs run one after
/// another, each request built from the digest as it is after the previous one, so the second
/// member is only asked for what the first did not have. A sync whose reason any member can
/// serve (`SyncReason.isCatchUp`) goes to the member that holds the most; repairs wait while
/// such a sync is pending, since it brings what they would.
struct SyncPlanner: Sendable {
    struct InFlight: Equatable, Sendable {
        var peer: NodeID
        var requestID: UInt64
        var reason: SyncReason
        var started: MonotonicInstant
        var lastProgress: MonotonicInstant
        var chunks = 0
        var entries = 0
        var bytes = 0
        /// What the member reported holding of the other members' streams when the request
        /// went out: the most its reply can cover (a later heartbeat may claim updates it
        /// received after it read its store for us).
        var reports: [NodeID: PeerReport] = [:]
        /// The epoch of the member's heartbeat those reports came from (0: none).
        var reportsEpoch: UInt64 = 0
        /// The catch-up this sync stands in for (a sync with the member the catch-up preferred
        /// brings what the catch-up would): wanted again if this one is abandoned.
        var standsInFor: SyncReason?
        /// Received entries were dropped while it ran (a failed commit, a refused timestamp): its
        /// completion does not prove we hold what the member held.
        var droppedEntries = false
        /// The request's `since` (a retry must repeat it).
        var since: StoreMark = .none
        /// It repeats a request abandoned for a slow chunk (see `Retry`).
        var isRetry = false
    }

    /// A sync abandoned because no chunk came in time, whose request may be sent again as it
    /// was (its id, its `since`): a retry. The member then goes on with its reply if it is still
    /// sending it, else leaves out what it already queued for the request on the same
    /// connection, which arrives first; behind a slow link, each new request's full reply
    /// queued behind the last one's. Only while nothing could have lost what is on its way: the
    /// sync connection not lost, no received entry dropped, no other sync started since. The
    /// reports are the first attempt's: its reply may have been read before anything the member
    /// learnt later.
    struct Retry: Equatable, Sendable {
        var peer: NodeID
        var requestID: UInt64
        var since: StoreMark
        var reports: [NodeID: PeerReport]
        var reportsEpoch: UInt64
    }

    private(set) var retry: Retry?

    /// A member a sync could go to, as the node sees it now.
    struct Candidate: Equatable, Sendable {
        var node: NodeID
        /// Alive, with a connected sync connection.
        var reachable: Bool
        /// Its reports show it holds every update we know we are missing.
        var coversMissing: Bool
        /// How far it has received the cluster's update streams (a sum of sequences): the most
        /// up to date member has the highest.
        var progress: UInt64
    }

    /// Syncs wanted with one member in particular.
    private(set) var wanted: [NodeID: SyncReason] = [:]
    /// A sync wanted with whichever member holds the most, and the member to prefer if it can.
    private(set) var catchUp: (reason: SyncReason, preferred: NodeID?)?
    private(set) var inFlight: InFlight?
    /// Per member, syncs with it abandoned in a row because a chunk took longer than the
    /// timeout: each doubles the time the next one waits for a chunk (`timeout(for:base:)`), up
    /// to 4 times (40 s: a 1 MiB chunk at about 250 kbit/s). A chunk is up to 1 MiB, which a
    /// link of 1 Mbit/s takes over 8 s to carry: with a fixed 10 s, a node behind such a link
    /// abandoned every sync and never caught up. Not more: a member that drops requests (its
    /// replies all taken) looks the same, and while one sync waits no other runs.
    private(set) var slowTimeouts: [NodeID: Int] = [:]
    /// Per member whose syncs time out (`slowTimeouts`): when the last one was abandoned, and
    /// the chunks of abandoned syncs that arrived late since the first (kept, see
    /// `Replica.receive(_:bytes:from:now:)`): what `stalls(now:)` reports.
    private(set) var timeoutHistory: [NodeID: TimeoutHistory] = [:]

    struct TimeoutHistory: Equatable, Sendable {
        var lastAbandoned: MonotonicInstant
        /// Syncs abandoned in a row since the history began (`slowTimeouts` outlives it when
        /// the digests came to agree: the patience stays, the stall is over).
        var timeouts = 0
        var lateChunks = 0
        var lateBytes = 0
    }

    /// Syncs with a member that timed out this many times in a row (waiting 10, 20 and 40 s for
    /// a chunk: 70 s) are listed as a problem: by then the longer patience did not help, and
    /// without it a node that never catches up showed nothing (only a log line per retry).
    static let stallThreshold = 3

    /// A member whose syncs keep timing out, as `status` describes it.
    struct Stall: Equatable, Sendable {
        var peer: NodeID
        var timeouts: Int
        var lateChunks: Int
        var lateBytes: Int
    }

    /// Members whose last `stallThreshold` or more syncs timed out in a row, the last within
    /// `window` (twice the longest patience, 80 s with the defaults: retries come sooner while
    /// the stall lasts) or a sync with them still running (it may crawl on late chunks). The
    /// history of another member whose last timeout is older is forgotten: no sync with it
    /// was wanted since.
    mutating func stalls(now: MonotonicInstant, window: Duration) -> [Stall] {
        timeoutHistory = timeoutHistory.filter { inFlight?.peer == $0.key || now - $0.value.lastAbandoned < window }
        // Nor is an abandoned request repeated so long after (it would cover other members'
        // streams by reports that old).
        if let retry, timeoutHistory[retry.peer] == nil { self.retry = nil }
        return timeoutHistory.compactMap { peer, history in
            guard history.timeouts >= Self.stallThreshold else { return nil }
            return Stall(peer: peer, timeouts: history.timeouts, lateChunks: history.lateChunks, lateBytes: history.lateBytes)
        }.sorted { $0.peer < $1.peer }
    }

    /// How long the sync with `peer` waits for its next chunk.
    func timeout(for peer: NodeID, base: Duration) -> Duration {
        base * (1 << min(slowTimeouts[peer] ?? 0, Self.maxTimeoutDoublings))
    }

    static let maxTimeoutDoublings = 2

    /// The longest a sync waits for a chunk (after `maxTimeoutDoublings` timeouts in a row).
    static func longestTimeout(base: Duration) -> Duration { base * (1 << maxTimeoutDoublings) }

    /// Lost updates are not repaired one origin at a time while a sync that brings everything
    /// is pending or running.
    var holdsRepairs: Bool {
        catchUp != nil || (inFlight.map { $0.reason.isCatchUp || $0.standsInFor != nil } ?? false)
    }

    mutating func want(_ reason: SyncReason, with peer: NodeID) {
        if reason.isCatchUp {
            wantCatchUp(reason, preferring: peer)
            return
        }
        if let existing = wanted[peer], existing <= reason { return }
        wanted[peer] = reason
    }

    mutating func wantCatchUp(_ reason: SyncReason, preferring peer: NodeID? = nil) {
        if let existing = catchUp, existing.reason <= reason {
            if existing.preferred == nil { catchUp?.preferred = peer }
            return
        }
        catchUp = (reason, peer ?? catchUp?.preferred)
    }

    /// The sync to start now, if any. `deferCatchUp`: updates are still pouring in (a node that
    /// just resumed is reading what its connections queued), so a catch-up waits rather than
    /// fetch what is about to arrive anyway.
    func next(_ candidates: [Candidate], deferCatchUp: Bool = false) -> (peer: NodeID, reason: SyncReason)? {
        guard inFlight == nil else { return nil }
        let reachable = candidates.filter(\.reachable)
        if let catchUp, !deferCatchUp, let best = Self.best(for: catchUp.preferred, among: reachable) {
            return (best, catchUp.reason)
        }
        let specific = reachable.compactMap { candidate in wanted[candidate.node].map { (candidate.node, $0) } }
        return specific.min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
    }

    /// The member a catch-up goes to: the one it was wanted with (the link that came back, the
    /// origin whose updates are lost, the member that said it holds more), else one whose reports
    /// show it holds what we miss, else the most up to date.
    private static func best(for preferred: NodeID?, among candidates: [Candidate]) -> NodeID? {
        candidates.min { a, b in
            if (a.node == preferred) != (b.node == preferred) { return a.node == preferred }
            if a.coversMissing != b.coversMissing { return a.coversMissing }
            if a.progress != b.progress { return a.progress > b.progress }
            return a.node < b.node
        }?.node
    }

    /// The request to send for a sync with `peer` whose `since` is `since`: the abandoned one
    /// again if it can be retried (its id, and the reports it was sent with), else nil (a new
    /// request).
    func retrying(with peer: NodeID, since: StoreMark) -> (requestID: UInt64, reports: [NodeID: PeerReport], reportsEpoch: UInt64)? {
        guard let retry, retry.peer == peer, retry.since == since else { return nil }
        return (retry.requestID, retry.reports, retry.reportsEpoch)
    }

    /// The reports a completed sync covers the other members' streams by: those of the life of
    /// the member that answered (its reply's mark names it). Reports from an earlier life (the
    /// last heartbeat heard before the request came from a process that has restarted since,
    /// wiped perhaps) say nothing of what this one held; nor does any report once received
    /// entries were dropped while the sync ran.
    static func coveringReports(of sync: InFlight, markEpoch: UInt64) -> [NodeID: PeerReport] {
        guard !sync.droppedEntries, sync.reportsEpoch == markEpoch else { return [:] }
        return sync.reports
    }

    /// The reactor sent the request chosen by `next`.
    mutating func started(
        with peer: NodeID, requestID: UInt64, reason: SyncReason, reports: [NodeID: PeerReport] = [:], reportsEpoch: UInt64 = 0,
        since: StoreMark = .none, now: MonotonicInstant
    ) {
        let isRetry = retry?.peer == peer && retry?.requestID == requestID
        retry = nil
        inFlight = InFlight(
            peer: peer, requestID: requestID, reason: reason, started: now, lastProgress: now, reports: reports, reportsEpoch: reportsEpoch,
            since: since, isRetry: isRetry)
        wanted[peer] = nil
        if !reason.isCatchUp, let catchUp, catchUp.preferred == peer { inFlight?.standsInFor = catchUp.reason }
        if reason.isCatchUp || catchUp?.preferred == peer { catchUp = nil }
    }

    /// Received entries were dropped: the sync in flight, if any, proves less when it completes.
    mutating func entriesDropped() {
        inFlight?.droppedEntries = true
        retry = nil
    }

    enum ChunkVerdict: Equatable, Sendable {
        /// Not the sync in flight (an abandoned one, or a repair reply): ignore it here.
        case unrelated
        case progress(InFlight)
        case completed(InFlight)
    }

    /// A chunk answering a sync request arrived from `peer`.
    mutating func received(requestID: UInt64, from peer: NodeID, entries: Int, bytes: Int, isLast: Bool, now: MonotonicInstant) -> ChunkVerdict {
        // Late: a chunk of an abandoned request, or of one asked again (see `Retry`).
        let isInFlight = inFlight?.peer == peer && inFlight?.requestID == requestID
        if !isInFlight || inFlight?.isRetry == true {
            timeoutHistory[peer]?.lateChunks += 1
            timeoutHistory[peer]?.lateBytes += bytes
        }
        guard var sync = inFlight, isInFlight else {
            // A late chunk of an earlier request to the same member: the link carries its
            // replies, the one in flight queued behind. Patience is for a link that brings
            // nothing, so it counts as progress (else each retry timed out behind the last).
            if inFlight?.peer == peer { inFlight?.lastProgress = now }
            return .unrelated
        }
        sync.chunks += 1
        sync.entries += entries
        sync.bytes += bytes
        sync.lastProgress = now
        if isLast {
            inFlight = nil
            slowTimeouts[peer] = nil
            timeoutHistory[peer] = nil
            return .completed(sync)
        }
        inFlight = sync
        return .progress(sync)
    }

    /// Abandons the sync in flight if nothing arrived for `timeout`; it is wanted again.
    mutating func expire(now: MonotonicInstant, timeout: Duration) -> InFlight? {
        guard let sync = inFlight, now - sync.lastProgress >= self.timeout(for: sync.peer, base: timeout) else { return nil }
        slowTimeouts[sync.peer, default: 0] += 1
        timeoutHistory[sync.peer, default: TimeoutHistory(lastAbandoned: now)].lastAbandoned = now
        timeoutHistory[sync.peer]?.timeouts += 1
        abandon(sync)
        if !sync.droppedEntries {
            retry = Retry(peer: sync.peer, requestID: sync.requestID, since: sync.since, reports: sync.reports, reportsEpoch: sync.reportsEpoch)
        }
        return sync
    }

    /// A heartbeat of `peer` carried our digest root: it holds exactly what we hold, so a sync
    /// with it would bring nothing. While syncs with it keep timing out (a slow link still
    /// carrying earlier replies), the stall is over: its record is cleared (its patience stays:
    /// the link is as slow as it was), a sync wanted with it in particular is dropped, and so is
    /// a catch-up preferring it (returned: the caller settles what its completion would have,
    /// since equal digests are as good as one). Not a catch-up for a failed commit, whose
    /// completion tests the disk. The sync in flight, if any, is left to complete: behind such a
    /// link each retry's reply queued behind the last one's and timed out in turn, long after
    /// the late chunks had brought everything. Without a timeout since the last completed sync,
    /// nothing changes: the usual triggers are left as they are.
    mutating func digestsAgree(with peer: NodeID) -> SyncReason? {
        guard timeoutHistory.removeValue(forKey: peer) != nil else { return nil }
        wanted[peer] = nil
        if retry?.peer == peer { retry = nil }
        guard let catchUp, catchUp.preferred == peer, catchUp.reason != .commitFailed else { return nil }
        self.catchUp = nil
        return catchUp.reason
    }

    /// The connection carrying the sync with `peer` was lost: its reply is gone with it.
    /// What was on its way on it is gone too: an abandoned request is not retried.
    mutating func connectionLost(to peer: NodeID) -> InFlight? {
        if retry?.peer == peer { retry = nil }
        guard let sync = inFlight, sync.peer == peer else { return nil }
        abandon(sync)
        return sync
    }

    /// `peer` left or was forgotten: nothing more is asked of it.
    mutating func remove(_ peer: NodeID) {
        if retry?.peer == peer { retry = nil }
        wanted[peer] = nil
        slowTimeouts[peer] = nil
        timeoutHistory[peer] = nil
        if catchUp?.preferred == peer { catchUp?.preferred = nil }
        if let sync = inFlight, sync.peer == peer {
            if sync.reason.isCatchUp { wantCatchUp(sync.reason) }
            if let stoodInFor = sync.standsInFor { wantCatchUp(stoodInFor) }
            inFlight = nil
        }
    }

    private mutating func abandon(_ sync: InFlight) {
        inFlight = nil
        if sync.reason.isCatchUp {
            wantCatchUp(sync.reason, preferring: sync.peer)
        } else {
            want(sync.reason, with: sync.peer)
        }
        if let stoodInFor = sync.standsInFor { wantCatchUp(stoodInFor, preferring: sync.peer) }
    }
}
