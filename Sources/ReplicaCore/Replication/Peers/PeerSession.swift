import Foundation

/// The timers of the peer layer, from `ReplicaConfiguration`, stretched for slow links.
struct PeerTiming: Equatable, Sendable {
    var heartbeatInterval: Duration
    var suspectAfter: Duration
    var downAfter: Duration
    /// A repair or sync that receives nothing for this long is abandoned.
    var requestTimeout: Duration
    /// A connected socket to a silent member is re-dialled this often.
    var silentRedialEvery: Duration = .seconds(1)

    /// Failure detection adapts to the measured round trip: a heartbeat reaches us one way
    /// (about half a round trip) late, and jitter on a slow link is a fraction of its round trip,
    /// so the suspect time is at least one heartbeat interval plus two round trips.
    func adapted(to roundTrip: Duration?) -> PeerTiming {
        guard let roundTrip else { return self }
        var timing = self
        timing.suspectAfter = max(suspectAfter, heartbeatInterval + roundTrip * 2)
        timing.downAfter = max(downAfter, timing.suspectAfter + heartbeatInterval * 3)
        timing.requestTimeout = max(requestTimeout, roundTrip * 20)
        return timing
    }
}

/// What this node knows about one member and how it talks to it: the per-peer state machine.
///
/// Events come in (a heartbeat, an update, a chunk, a connection event, a timer tick); actions
/// come out for the `Replica` reactor to carry out (re-dial a socket, ask for a repair, want a
/// sync, exchange member tables). No sockets, no clocks read: `now` is passed in, so every
/// decision is testable with tables (Tests/ReplicaCoreTests/PeerSessionTests.swift).
struct PeerSession: Sendable {
    let node: NodeID
    private(set) var record: MemberRecord
    private(set) var liveness: Liveness
    private(set) var subscriber: LinkDialer
    private(set) var dealer: LinkDialer
    /// This member's own update stream (whatever path its updates take).
    private(set) var stream = OriginStream()
    private(set) var clock = ClockEstimate()
    private(set) var incarnation: UUID?
    private(set) var heartbeat: HeardHeartbeat?
    /// Its publications in its current life, as its heartbeats told them: a sync reply leaves
    /// out its writes that the requester reports holding (`HeldByRequester`).
    private(set) var publications: PublishedStamps?
    /// About a minute of heartbeats at the default interval (16 bytes each).
    static let publicationRecords = 128
    /// The member's wall clock in its last heartbeat and when that arrived: echoed in ours, so
    /// that it can measure its round trip and clock (kept even from a heartbeat that is
    /// otherwise ignored for a skewed clock: that is how the member learns it is skewed).
    private(set) var echo: (wallMillis: UInt64, receivedAt: MonotonicInstant)?
    /// When a heartbeat of it was last taken, naming the life the stream follows (one ignored
    /// for a skewed clock names nothing: its epoch is not read).
    private(set) var heartbeatTakenAt: MonotonicInstant?
    private(set) var repair: RepairInFlight?
    /// Where the last completed sync with this member left off: the next one asks only for
    /// what it stored since. Forgotten once when a difference outlives a completed sync with
    /// it (see `heartbeatReceived`), and when entries received are dropped.
    private(set) var syncMark: StoreMark = .none
    private(set) var stats = Stats()
    private var membersMismatches = 0
    /// When an entry it wrote was last refused for a timestamp too far ahead, and by how much.
    private var lastFutureRejection: (at: MonotonicInstant, aheadMillis: Int64, stampWallMillis: UInt64)?
    /// Refusals counted since `takeNewFutureRejections` last looked.
    private var futureRejectionsUnreported = 0
    /// Heartbeats in a row with another member table before the next exchange: 2, doubled (up
    /// to `maxExchangeSpacing`) after each exchange that left both tables as they were. Such a
    /// difference is one exchanges cannot settle (a member of an earlier version keeping the
    /// departures this one dropped, or a clock far from ours); exchanging the whole table every
    /// second over it cost bandwidth for nothing.
    private var exchangeSpacing = 2
    /// The two tables' digests (theirs, ours) at the last exchange.
    private var lastExchange: (theirs: UInt64, ours: UInt64)?
    static let maxExchangeSpacing = 64
    /// The member's digest root and ours while both stay as they are.
    private var quiet: QuietRoots?
    /// Syncs wanted in a row for the same difference, while our root stayed and the two did not
    /// agree (the last one settled nothing: the member is itself behind and syncing, or its
    /// link is too slow for a reply): each doubles the quiet time the next needs, up to 64 half
    /// intervals. A node stuck behind a slow link was sent a request (with 8 KiB of bucket
    /// hashes) by each member twice a second, which slowed the very sync it waited for.
    private var divergenceSyncs = 0

    /// The member's digest root and ours, as long as neither moves.
    struct QuietRoots: Sendable {
        var theirs: UInt64
        var ours: UInt64
        /// When this pair was first seen.
        var since: MonotonicInstant
        /// Since when the next sync for it waits: the first sight, then each sync wanted for it.
        var waitFrom: MonotonicInstant
        /// Syncs with the member completed while the pair held, and how many of them had asked
        /// in full (no mark).
        var syncsCompleted = 0
        var fullSyncsCompleted = 0
    }

    /// Syncs with a member that must complete while the roots stay as they were, one of them
    /// asked in full, before the difference counts as one syncing does not settle.
    static let syncsBeforeDivergence = 3

    struct HeardHeartbeat: Equatable, Sendable {
        var epoch: UInt64
        var sequence: UInt64
        var wallMillis: UInt64
        var receivedAt: MonotonicInstant
        var digestRoot: UInt64
        /// Our digest root when it arrived (the quiet-digest rule compares two heartbeats).
        var ourRoot: UInt64
        var membersDigest: UInt64
        var storeSerial: UInt64
        var entryCount: UInt64
        var reports: [NodeID: PeerReport]
    }

    struct RepairInFlight: Equatable, Sendable {
        var requestID: UInt64
        var range: ClosedRange<UInt64>
        var lastProgress: MonotonicInstant
    }
    /// Repairs in a row that timed out: a member that answers none is asked no more, and a
    /// sync brings the losses instead.
    private var repairTimeouts = 0
    /// Repairs in a row it answered "no longer held", and the catch-up that answer wants,
    /// deferred by a back-off that doubles with each (`unservedCatchUpWait`): a member whose
    /// heartbeats claim updates it never serves (a bug, or a hostile member) is chased once per
    /// wait, not once per claim, and is listed (`claimsUnserved`).
    private(set) var unservedRepairs = 0
    private(set) var unservedSince: MonotonicInstant?
    private var owedCatchUp: MonotonicInstant?
    /// Unserved repairs in a row that list the member as a problem.
    static let unservedRepairsToList = 3
    /// Losses handed to a sync (their repair was unavailable or kept timing out), and the
    /// updates of a new epoch published before we heard it: not held here until a sync covers
    /// them, whatever the stream says. One span from the first such sequence to the last (what
    /// lies between counts as lost too: held less, never more, than is here).
    private(set) var lost: ClosedRange<UInt64>?

    struct Stats: Equatable, Sendable {
        var syncsCompleted = 0
        var repairsCompleted = 0
        var repairedUpdates = 0
        /// Bytes of every message received from this member, by kind of traffic.
        var updateBytes = 0
        var syncBytes = 0
        var repairBytes = 0
        /// Entries it wrote that were refused for a timestamp too far ahead, and its heartbeats
        /// taken for liveness only for the same reason.
        var futureTimestampsRejected = 0
        var skewedHeartbeats = 0
    }

    /// What we know that the session's decisions depend on.
    struct LocalView: Equatable, Sendable {
        var node: NodeID
        var digestRoot: UInt64
        var membersDigest: UInt64
        /// A sync with this member is in flight.
        var syncing: Bool
        var heartbeatInterval: Duration = .seconds(1)
    }

    /// What the reactor must do.
    enum Action: Equatable, Sendable {
        case stateChanged(Liveness.Transition)
        case wantSync(SyncReason)
        /// Send our member table and ask for theirs (the tables differ).
        case exchangeMembers
        /// Ask the member to resend these updates from its retransmit buffer.
        case requestRepair(ClosedRange<UInt64>)
        case redialSubscriber
        case redialDealer
        /// The sync connection was lost: a sync or repair riding on it is gone.
        case syncConnectionLost
    }

    init(record: MemberRecord, now: MonotonicInstant) {
        node = record.node
        self.record = record
        liveness = Liveness(now: now)
        // A member first learnt of as departed is listed as left (not suspect), and its return
        // is a rejoin: silence is counted from then, not from when its departure was learnt.
        if record.status != .active { _ = liveness.left(now: now) }
        subscriber = LinkDialer(dialedAt: now)
        dealer = LinkDialer(dialedAt: now)
    }

    /// The timing for this member, adapted to its round trip.
    func timing(_ base: PeerTiming) -> PeerTiming { base.adapted(to: clock.worstRoundTrip) }

    func dialTiming(_ base: PeerTiming) -> LinkDialer.Timing {
        .adapted(to: dialRoundTrip, silentRedialEvery: base.silentRedialEvery)
    }

    /// The round trip dialling allows for: the worst recent one from heartbeat echoes, else the
    /// quicker of the two sockets' last TCP connects (either is about one round trip; the slower
    /// may include a busy turn), else unknown.
    var dialRoundTrip: Duration? {
        clock.worstRoundTrip ?? [subscriber.connectRoundTrip, dealer.connectRoundTrip].compactMap { $0 }.min()
    }

    func hearsDirectly(now: MonotonicInstant, base: PeerTiming) -> Bool {
        liveness.hearsDirectly(now: now, window: timing(base).suspectAfter)
    }

    /// What our heartbeat may report: heard directly, and by its own heartbeat lately, which names
    /// the life our report's epoch is of. (Requests on ROUTER, or heartbeats ignored for a clock
    /// beyond the limit, keep a member heard while its epoch goes unread; paired with the epoch of
    /// a life it left, that reads as a second process with its id.)
    func hearsHeartbeatsDirectly(now: MonotonicInstant, base: PeerTiming) -> Bool {
        guard hearsDirectly(now: now, base: base), let heartbeatTakenAt else { return false }
        return now - heartbeatTakenAt < timing(base).suspectAfter
    }

    /// Not heard on its own connections for its suspect time (see `Liveness.silentDirectly`).
    func silentDirectly(now: MonotonicInstant, base: PeerTiming) -> Bool {
        liveness.silentDirectly(now: now, window: timing(base).suspectAfter)
    }

    /// Members this one says it hears directly (from its last heartbeat).
    var hears: Set<NodeID> {
        Set(heartbeat?.reports.values.filter(\.hearsDirectly).map(\.node) ?? [])
    }

    // MARK: Messages

    /// Any message on this member's own connections.
    mutating func heardDirectly(now: MonotonicInstant) -> [Action] {
        liveness.heardDirectly(now: now).map { [.stateChanged($0)] } ?? []
    }

    /// A member we hear vouched for this one (or passed on one of its updates).
    mutating func heardIndirectly(now: MonotonicInstant) -> [Action] {
        liveness.heardIndirectly(now: now).map { [.stateChanged($0)] } ?? []
    }

    mutating func heartbeatReceived(_ message: Heartbeat, local: LocalView, now: MonotonicInstant, wallMillis: UInt64) -> [Action] {
        var actions = heardDirectly(now: now)
        echo = (message.wallMillis, now)
        heartbeatTakenAt = now
        if let known = incarnation, known != message.incarnation {
            // What the old incarnation published and we lost can no longer be repaired from it;
            // the sync brings whatever of it reached others.
            stream.beginIncarnation()
            forgetLosses(restartedThrough: 0)
            publications = nil
            actions.append(.wantSync(.newIncarnation))
        }
        incarnation = message.incarnation
        let firstHeard = stream.epoch == 0
        if stream.announced(epoch: message.epoch, sequence: message.sequence) == .restarted {
            forgetLosses(restartedThrough: stream.through)
            actions.append(.wantSync(.peerRestarted))
        } else if firstHeard, stream.through >= 1 {
            // What it published before we heard it is taken as received (the start-up sync
            // brings it), but it is not here yet: not reported as held until a sync, or equal
            // digests, cover it. (A node that leaves counts on these reports.)
            markLost(1...stream.through)
        }
        var reports: [NodeID: PeerReport] = [:]
        for report in message.reports { reports[report.node] = report }
        if let echo = reports[local.node] {
            clock.record(echoedWallMillis: echo.echoWallMillis, heldMillis: echo.heldMillis,
                         peerWallMillis: message.wallMillis, receivedWallMillis: wallMillis)
        }
        // Digests differ all the time while writes are in flight. Divergence is a difference
        // that holds while neither side changes: our root and the member's both stayed put
        // between two of its heartbeats, for at least half an interval of our own time
        // (heartbeats read back to back from a backlog say nothing about quiet), and still
        // differ. (Losses during writes show as sequence gaps.)
        //
        // Each further sync for the same difference waits twice as long; a difference is new when
        // our root moved (we learnt or wrote something) or after the roots agreed. A member whose
        // root moves while ours stays is catching up (from us or another member): its difference
        // is not new. (Reset at each of its moves, a member catching up behind a slow link, one
        // value every 15 s, drew 6 syncs per value from every member that held it: 111 requests
        // of 8 KB in a catch-up of 5 minutes, on the link its reply crawled through; 17 since.)
        if message.digestRoot == local.digestRoot || quiet.map({ $0.ours != local.digestRoot }) == true {
            divergenceSyncs = 0
        }
        if var quiet, quiet.theirs == message.digestRoot, quiet.ours == local.digestRoot {
            let spacing = local.heartbeatInterval / 2 * (1 << min(divergenceSyncs, 6))
            if message.digestRoot != local.digestRoot, !local.syncing, now - quiet.waitFrom >= spacing {
                // The same two roots after a sync with the member completed, none of them in
                // full: that sync settled nothing, so the next one (whatever wants it) names no
                // mark, and its reply leaves nothing out. Replies under a mark leave out what it
                // and our reports say we hold; a wrong claim (a report past a gap, by a bug or a
                // race) would otherwise keep what it hid from ever being sent by this member, a
                // difference for good. Once per pair: a full reply that settled nothing either
                // shows the mark was not the cause, and full replies of a difference that is
                // only slow to close (tombstones collected at different times) cost. A member
                // whose root moves is catching up: its pair is new, and so is its count.
                // (Until the sync in full completes the mark stays dropped: dropping it again
                // changes nothing.)
                if quiet.syncsCompleted > 0, quiet.fullSyncsCompleted == 0 { syncMark = .none }
                actions.append(.wantSync(.digestsDiffer))
                quiet.waitFrom = now
                self.quiet = quiet
                divergenceSyncs += 1
            }
        } else {
            quiet = QuietRoots(theirs: message.digestRoot, ours: local.digestRoot, since: now, waitFrom: now)
        }
        // Member tables: two heartbeats in a row with another table (an announcement may be on
        // its way in between) start an exchange.
        if message.membersDigest != local.membersDigest {
            let tables = (theirs: message.membersDigest, ours: local.membersDigest)
            if let last = lastExchange, last != tables {
                // A table changed since the last exchange: a new difference.
                exchangeSpacing = 2
                lastExchange = nil
            }
            membersMismatches += 1
            if membersMismatches >= exchangeSpacing {
                membersMismatches = 0
                if lastExchange != nil { exchangeSpacing = min(exchangeSpacing * 2, Self.maxExchangeSpacing) }
                lastExchange = tables
                actions.append(.exchangeMembers)
            }
        } else {
            membersMismatches = 0
            exchangeSpacing = 2
            lastExchange = nil
        }
        if publications?.epoch != message.epoch {
            publications = PublishedStamps(epoch: message.epoch, capacity: Self.publicationRecords)
        }
        publications?.heard(through: message.sequence, timestamp: message.timestamp)
        heartbeat = HeardHeartbeat(
            epoch: message.epoch, sequence: message.sequence, wallMillis: message.wallMillis, receivedAt: now,
            digestRoot: message.digestRoot, ourRoot: local.digestRoot, membersDigest: message.membersDigest,
            storeSerial: message.storeSerial, entryCount: message.entryCount, reports: reports)
        return actions
    }

    /// One of this member's updates arrived: on its own connection (`epoch` nil) or relayed.
    mutating func updateReceived(sequence: UInt64, epoch: UInt64? = nil) -> [Action] {
        updatesReceived(sequence...sequence, epoch: epoch)
    }

    /// A batch of this member's updates arrived on its own connection (`bytes` long): it is
    /// heard, and its stream advances, in one step for the whole batch.
    mutating func updatesReceived(_ sequences: ClosedRange<UInt64>, epoch: UInt64? = nil, bytes: Int = 0, now: MonotonicInstant? = nil) -> [Action] {
        var actions = now.map { heardDirectly(now: $0) } ?? []
        stats.updateBytes += bytes
        let unknown = stream.epoch == 0
        if stream.received(sequences, epoch: epoch) == .restarted {
            forgetLosses(restartedThrough: stream.through)
            actions.append(.wantSync(.peerRestarted))
        } else if unknown, let epoch, stream.epoch == epoch, sequences.lowerBound > 1 {
            // The epoch first named by a relay (updates that came directly before it named none,
            // so the stream starts over at the relayed one): the first heartbeat will not see the
            // stream as new, so what came before is marked here, as it does (taken as received,
            // not held until a sync or equal digests cover it). Only if the stream took that
            // epoch: a straggler of a life before a new incarnation is ignored.
            markLost(1...sequences.lowerBound - 1)
        }
        return actions
    }

    /// One of this member's updates arrived through a relay (another member passed it on,
    /// naming the life it belongs to). The member's own heartbeats say which life it is in
    /// while we hear it directly: a relay naming another life then moves nothing (a relay
    /// could otherwise lock the stream onto an epoch the member never had).
    mutating func relayReceived(sequence: UInt64, epoch: UInt64, now: MonotonicInstant, base: PeerTiming) -> [Action] {
        var actions = heardIndirectly(now: now)
        guard epoch == stream.epoch || !hearsDirectly(now: now, base: base) else { return actions }
        actions += updateReceived(sequence: sequence, epoch: epoch)
        return actions
    }

    /// Another member holds this member's stream through `sequence` (its heartbeat said so),
    /// and we cannot hear this member ourselves: we lack what lies beyond ours.
    mutating func heldElsewhere(epoch: UInt64, through sequence: UInt64) {
        _ = stream.learned(epoch: epoch, through: sequence)
    }

    /// A heartbeat from this member whose clock is too far ahead of ours: it proves the member
    /// alive and measures its clock, and nothing else is taken from it.
    mutating func skewedHeartbeatReceived(_ message: Heartbeat, local node: NodeID, now: MonotonicInstant, wallMillis: UInt64) -> [Action] {
        let actions = heardDirectly(now: now)
        echo = (message.wallMillis, now)
        if let echo = message.reports.first(where: { $0.node == node }) {
            clock.record(echoedWallMillis: echo.echoWallMillis, heldMillis: echo.heldMillis,
                         peerWallMillis: message.wallMillis, receivedWallMillis: wallMillis)
        }
        stats.skewedHeartbeats += 1
        return actions
    }

    /// An entry it wrote, stamped at `stampWallMillis`, was refused as too far ahead.
    mutating func countFutureRejection(aheadMillis: Int64, stampWallMillis: UInt64, now: MonotonicInstant) {
        stats.futureTimestampsRejected += 1
        futureRejectionsUnreported += 1
        lastFutureRejection = (now, aheadMillis, max(stampWallMillis, lastFutureRejection?.stampWallMillis ?? 0))
    }

    /// How far ahead of our clock the entries it wrote were when one was last refused for it,
    /// if that was within `window` and the latest such stamp is still beyond
    /// `acceptedThroughWallMillis` (what our clock takes now): its clock was fixed, but what it
    /// wrote meanwhile (and its logical clock) are still ahead, which its clock offset no longer
    /// shows. Once our clock takes them, they are taken at the next sync: it was listed for a
    /// minute more (the window), long after.
    func refusedEntriesAhead(now: MonotonicInstant, window: Duration, acceptedThroughWallMillis: UInt64) -> Int64? {
        guard let last = lastFutureRejection, now - last.at < window, last.stampWallMillis > acceptedThroughWallMillis else { return nil }
        return last.aheadMillis
    }

    /// The refusals counted since the last call (the `peerClock` problem's count).
    mutating func takeNewFutureRejections() -> Int {
        defer { futureRejectionsUnreported = 0 }
        return futureRejectionsUnreported
    }

    /// Our wall clock was stepped: offsets measured against the old one are void.
    /// The wall clock was stepped (now `wallMillis`): its measures start afresh.
    mutating func resetClock(wallMillis: UInt64) {
        clock = ClockEstimate()
        clock.ignoreEchoes(sentBefore: wallMillis)
    }

    mutating func countBytes(update: Int = 0, sync: Int = 0, repair: Int = 0) {
        stats.updateBytes += update
        stats.syncBytes += sync
        stats.repairBytes += repair
    }

    // MARK: Connections

    mutating func subscriberTCPConnected(now: MonotonicInstant) { subscriber.tcpConnected(now: now) }
    mutating func dealerTCPConnected(now: MonotonicInstant) { dealer.tcpConnected(now: now) }

    mutating func subscriberHandshakeSucceeded(now: MonotonicInstant) {
        _ = subscriber.handshakeSucceeded(now: now)
    }

    /// The sync connection completed a handshake. A reconnection wants no sync by itself: what
    /// the member published while the link was down shows as a sequence gap at its next
    /// heartbeat and is repaired, exactly, from its retransmit buffer (a sync would fetch
    /// everything it stored since the last one, most of which arrived meanwhile by other paths).
    mutating func dealerHandshakeSucceeded(now: MonotonicInstant) {
        _ = dealer.handshakeSucceeded(now: now)
    }

    /// Lost, or re-dialled: the member may come back as a new life on it (`connectionLost`).
    mutating func subscriberDisconnected(now: MonotonicInstant, base: PeerTiming) {
        subscriber.disconnected(now: now, timing: dialTiming(base))
        stream.connectionLost()
    }

    mutating func dealerDisconnected(now: MonotonicInstant, base: PeerTiming) -> [Action] {
        dealer.disconnected(now: now, timing: dialTiming(base))
        abandonRepair()
        return [.syncConnectionLost]
    }

    mutating func subscriberRedialed(now: MonotonicInstant) {
        subscriber.dialed(now: now)
        stream.connectionLost()
    }

    mutating func dealerRedialed(now: MonotonicInstant) -> [Action] {
        dealer.dialed(now: now)
        // A request in flight went with the old pipe.
        abandonRepair()
        return [.syncConnectionLost]
    }

    // MARK: Repairs and syncs

    /// The repair in flight will not be answered: what it asked for is missing again.
    private mutating func abandonRepair() {
        if let current = repair { stream.returnRepair(current.range) }
        repair = nil
    }

    mutating func repairStarted(requestID: UInt64, range: ClosedRange<UInt64>, now: MonotonicInstant) {
        repair = RepairInFlight(requestID: requestID, range: range, lastProgress: now)
    }

    /// A repair taken out of the stream could not be sent (the connection was not ready): its
    /// range is missing again, to be asked for at the next tick. (Before, it was simply lost:
    /// neither missing nor in flight, so only a later sync brought it.)
    /// A send that keeps failing counts like a timeout: after `repairAttempts`, a sync.
    mutating func repairNotSent(_ range: ClosedRange<UInt64>) -> [Action] {
        stream.returnRepair(range)
        return repairFailed()
    }

    /// A repair timed out or could not be sent. After `repairAttempts` in a row, a sync is
    /// wanted instead, which brings everything: no more repairs of these losses, and until that
    /// sync covers them they are not reported as held.
    private mutating func repairFailed() -> [Action] {
        repairTimeouts += 1
        guard repairTimeouts >= Self.repairAttempts else { return [] }
        repairTimeouts = 0
        giveUpLosses()
        return [.wantSync(.repairTimedOut)]
    }

    /// A new epoch of this member: its old losses and repair no longer apply. What it
    /// published in the new epoch before we heard it may have been dropped (our connection was
    /// down meanwhile): not held until the restart's sync covers it.
    private mutating func forgetLosses(restartedThrough through: UInt64) {
        repair = nil
        repairTimeouts = 0
        lost = through >= 1 ? 1...through : nil
    }

    private mutating func markLost(_ range: ClosedRange<UInt64>) {
        lost = lost.map { min($0.lowerBound, range.lowerBound)...max($0.upperBound, range.upperBound) } ?? range
    }

    /// How far this member's stream is held here, for our heartbeats' reports. The stream's
    /// `contiguousThrough` counts a range being repaired as good as received, which is right
    /// for deciding what to ask for, but not for telling others: a member that cannot hear this
    /// one would sync from us the range we are still waiting for, get part of it, and take the
    /// rest as covered (seen: 10,000 updates fetched 1 s later by anti-entropy instead).
    /// Losses handed to a sync (`lost`) are not held either, until a sync covers them.
    var heldThrough: UInt64 {
        var held = stream.reportableThrough
        if let range = repair?.range { held = min(held, range.lowerBound - 1) }
        if let lost { held = min(held, lost.lowerBound - 1) }
        return held
    }

    enum RepairVerdict: Equatable, Sendable {
        case unrelated
        case progress
        case completed
        /// The member no longer holds those updates: a sync must bring them.
        case unavailable
        /// The same, once again in a row: the sync is wanted after a back-off (`tick`).
        case unavailableDeferred
    }

    /// How long the catch-up after the `unserved`-th "no longer held" in a row waits: at once
    /// for the first (a member down longer than its buffer lasts), then 1, 2, 4 ... 64 s.
    static func unservedCatchUpWait(afterUnserved unserved: Int) -> Duration {
        guard unserved > 1 else { return .zero }
        return .seconds(1 << min(unserved - 2, 6))
    }

    /// Whether its claims went unserved often enough in a row to list it, and since when.
    var claimsUnserved: MonotonicInstant? {
        unservedRepairs >= Self.unservedRepairsToList ? unservedSince : nil
    }

    mutating func repairChunk(requestID: UInt64, entries: Int, isLast: Bool, isUnavailable: Bool, now: MonotonicInstant) -> RepairVerdict {
        guard let current = repair, current.requestID == requestID else { return .unrelated }
        if isUnavailable {
            // Everything else missing of its stream goes to the same catch-up: asking for it
            // range by range would meet the same answer, thousands of times for a claim far
            // beyond what it published.
            markLost(current.range)
            giveUpLosses()
            repair = nil
            unservedRepairs += 1
            if unservedRepairs == 1 { unservedSince = now }
            let wait = Self.unservedCatchUpWait(afterUnserved: unservedRepairs)
            if wait == .zero { return .unavailable }
            owedCatchUp = now + wait
            return .unavailableDeferred
        }
        stats.repairedUpdates += entries
        repairTimeouts = 0
        unservedRepairs = 0
        unservedSince = nil
        owedCatchUp = nil
        if isLast {
            repair = nil
            stats.repairsCompleted += 1
            return .completed
        }
        repair?.lastProgress = now
        return .progress
    }

    /// A full sync with this member completed: everything it held at `mark` is here, its own
    /// updates up to `sequence` (of the mark's epoch) among them. `askedInFull`: its request
    /// named no mark, so its reply left nothing out.
    mutating func syncCompleted(mark: StoreMark, sequence: UInt64, askedInFull: Bool) {
        syncMark = mark
        quiet?.syncsCompleted += 1
        if askedInFull { quiet?.fullSyncsCompleted += 1 }
        stats.syncsCompleted += 1
        covered(through: sequence, epoch: mark.epoch)
    }

    /// How long our digest root and the member's have differed, neither moving, through at
    /// least `syncsBeforeDivergence` completed syncs with it, one asked in full: a difference
    /// syncing does not settle, once it has lasted `after` (nil before, or if there is none).
    /// A root that moves (a write, a sync that brought something) starts the count again.
    func unsettledDifference(now: MonotonicInstant, after: Duration) -> Duration? {
        guard let quiet, quiet.theirs != quiet.ours, quiet.syncsCompleted >= Self.syncsBeforeDivergence,
              quiet.fullSyncsCompleted >= 1, now - quiet.since >= after
        else { return nil }
        return now - quiet.since
    }

    /// Received entries were dropped (a failed commit): the mark no longer says what we hold.
    mutating func forgetSyncMark() { syncMark = .none }

    /// Received entries were dropped (a failed commit, a refused timestamp). Which of this
    /// member's updates they were is not known here, so none received so far counts as held
    /// until a sync (or equal digests) covers them: the stream says received, the store lacks.
    /// Those waiting for a heartbeat to name their epoch count too: that heartbeat moves the
    /// stream over them.
    mutating func receivedEntriesDropped() {
        let received = stream.receivedThrough
        if received >= 1 { markLost(1...received) }
    }

    /// Another member's report covers this member's stream through `sequence` (a sync with it
    /// completed, or its digests equal ours). What we dropped ourselves stays lost: a report
    /// within what this member showed us cannot be told from a lie, and only this member's own
    /// word (its sync, its equal digests) clears it.
    mutating func coveredByReport(through sequence: UInt64, epoch: UInt64) {
        _ = stream.covered(through: sequence, epoch: epoch)
    }

    /// A sync with this member (or its equal digests) covers its stream through `sequence`.
    mutating func covered(through sequence: UInt64, epoch: UInt64) {
        let sequence = stream.covered(through: sequence, epoch: epoch)
        // A cover up to part of the loss leaves the rest lost.
        if let lost, epoch == stream.epoch, sequence > 0, sequence >= lost.lowerBound {
            self.lost = sequence >= lost.upperBound ? nil : sequence + 1...lost.upperBound
        }
    }

    /// Known losses are given up (a catch-up found nobody reachable that holds them): no more
    /// repairs of them, and they are not reported as held until a sync covers them.
    mutating func giveUpLosses() {
        if let first = stream.missing.first?.lowerBound, let last = stream.missing.last?.upperBound { markLost(first...last) }
        stream.clearMissing()
    }

    // MARK: Membership

    /// A new record for this member (a restart, another address, a departure, a return).
    mutating func recordChanged(_ new: MemberRecord, now: MonotonicInstant) -> [Action] {
        let old = record
        record = new
        if new.status == .left { return liveness.left(now: now).map { [.stateChanged($0)] } ?? [] }
        if old.status != .active && new.status == .active {
            return liveness.rejoined(now: now).map { [.stateChanged($0)] } ?? []
        }
        return []
    }

    /// The member's record names another address (or key): it restarted elsewhere, so its old
    /// connections, round trip, repair and sync mark go, but its stream stays. Its first
    /// heartbeat there then shows the new epoch as a restart (a sync, as for a restart in
    /// place); a fresh session took it for the first sight of the member, wanted no sync, and
    /// what the member published late in its last life or early in this one, before we
    /// subscribed, waited for the next digest sync.
    mutating func moved(to new: MemberRecord, now: MonotonicInstant) {
        var moved = PeerSession(record: new, now: now)
        moved.stream = stream
        moved.incarnation = incarnation
        moved.lost = lost
        moved.stats = stats
        // What it lost of its old life (missing, or being repaired) cannot be repaired from the
        // new process (a repair names no epoch: it would answer from its new buffer): lost, for
        // the restart's sync to bring.
        moved.stream.clearMissing()
        moved.stream.connectionLost()
        moved.forgetLosses(restartedThrough: stream.through)
        self = moved
    }

    /// This node was stalled for `gap` (stopped, starved): nothing heard meanwhile is not the
    /// member's fault.
    mutating func stalled(for gap: Duration, now: MonotonicInstant, wallMillis: UInt64) {
        liveness.stalled(for: gap, now: now)
        clock.ignoreEchoes(sentBefore: wallMillis)
    }

    // MARK: Timers

    /// Ages liveness, re-dials what needs it, times out a repair, and starts the next repair.
    /// `holdRepairs`: a sync that brings everything is pending; lost updates wait for it.
    mutating func tick(now: MonotonicInstant, base: PeerTiming, holdRepairs: Bool) -> [Action] {
        guard record.status == .active else { return [] }
        var actions: [Action] = []
        let timing = timing(base)
        if let transition = liveness.tick(now: now, suspectAfter: timing.suspectAfter, downAfter: timing.downAfter) {
            actions.append(.stateChanged(transition))
        }
        let silent = liveness.silentDirectly(now: now, window: timing.suspectAfter)
        let dial = dialTiming(base)
        if subscriber.shouldRedial(now: now, peerSilent: silent, timing: dial) { actions.append(.redialSubscriber) }
        if dealer.shouldRedial(now: now, peerSilent: silent, timing: dial) { actions.append(.redialDealer) }
        if let current = repair, now - current.lastProgress >= timing.requestTimeout {
            abandonRepair()
            actions += repairFailed()
        }
        if let owed = owedCatchUp, now >= owed {
            owedCatchUp = nil
            actions.append(.wantSync(.repairUnavailable))
        }
        if repair == nil, !holdRepairs, !stream.missing.isEmpty {
            if dealer.isConnected && !silent, let range = stream.takeRepair(limit: Self.maxRepair) {
                actions.append(.requestRepair(range))
            } else if liveness.silentDirectly(now: now, window: timing.downAfter) {
                // We cannot reach it to ask: a member that holds its updates must bring them.
                // Not sooner: a member that is only slow (busy serving, a backlog of its own)
                // answers its repairs, and a sync would fetch far more than they do.
                actions.append(.wantSync(.repairUnavailable))
            }
        }
        return actions
    }

    /// Most updates asked for in one repair request.
    static let maxRepair: UInt64 = 4096
    /// Repairs in a row that may time out before a sync is wanted instead.
    static let repairAttempts = 2
}
