import Foundation
import Synchronization
import Logging

/// A running node: its store, clock, sockets and members, owned by one actor.
///
/// The actor is the reactor of the peer layer. It owns what does I/O (sockets, store, clock
/// readings) and one value, `core` (`NodeCore`), that holds everything the node decides from:
/// the state machines (`PeerSession` per member, `SyncPlanner`, `SyncResponder`, `CommitQueue`,
/// `Membership`, `ClockCheck`, `PeriodicDuties`, the health checks) and their state. It feeds
/// them what happens and carries out what they return. docs/architecture.md draws them.
///
/// The actor runs on its own `PollLoop` thread, which also waits on its sockets. One wake-up
/// reads everything that arrived, merges it together with the local writes queued meanwhile in
/// a single SQLite transaction (group commit), then publishes the local writes and tells
/// observers. A local write resumes its caller only after that commit.
public actor Replica: PollLoopOwner {
    public nonisolated let configuration: ReplicaConfiguration
    /// This process's life as a node (`NodeLife`).
    nonisolated let life: NodeLife
    public nonisolated var identity: StoreIdentity { life.identity }
    /// Names this replica's counter slots: the incarnation, or a new id after a run of its data
    /// directory that did not stop cleanly (`SQLiteStore.beginRun` says why).
    public nonisolated var counterSlotOwner: UUID { life.counterSlotOwner }
    /// This process's life: update sequences count from 1 within it.
    public nonisolated var epoch: UInt64 { life.epoch }
    /// Reads committed entries from any thread (synchronous loads of shared keys).
    public nonisolated let reader: any StoreReader
    nonisolated let loop: any ReplicaLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    let logger: Logger
    let codec: WireCodec
    /// Commit latency and batch sizes, through swift-metrics (see `ReplicaMetricsReporter`).
    let commitMetrics: CommitMetrics
    let store: any ReplicaStore
    /// This node's monotonic clock: the system's, or a simulation's (`ReplicaRuntime`).
    nonisolated let instant: @Sendable () -> MonotonicInstant
    var started: MonotonicInstant { life.started }
    var timestampAtStart: HybridTimestamp { life.timestampAtStart }
    nonisolated var timing: PeerTiming { configuration.peerTiming }

    /// Its sockets, and where they come from (libzmq, or a simulated network).
    var sockets: NodeSockets
    public private(set) var isShutDown = false

    /// Everything the node decides from (`NodeCore`): its machines and their state.
    var core: NodeCore

    // Relays: origins we take through which member, and sources others asked us to pass on.

    // Outgoing state.

    // Timers.
    /// What other threads hand the loop (`Inbox`), under one lock.
    nonisolated let inbox = Mutex(Inbox())
    static let catchUpPatience: Duration = .seconds(3)

    /// The program's observers and `leave()` callers (`Callers`).
    var callers = Callers()

    /// Who may connect (CURVE keys, the ZAP socket, refused handshakes).
    var admission: Admission

    // Counters and tombstones (Replica+Families.swift).

    struct Observer {
        var prefix: String
        var receiver: ChangeReceiver
    }

    /// Where an observer's changes go: an `AsyncStream` (`changes(prefix:)`), or a handler run on
    /// the loop thread right after the commit (`observeChanges(prefix:handler:)`).
    enum ChangeReceiver {
        case stream(AsyncStream<Change>.Continuation, ChangeLoss?)
        case handler(@Sendable (Change) -> Void)

        func deliver(_ change: Change) {
            switch self {
            case .stream(let continuation, let loss):
                if case .dropped = continuation.yield(change) { loss?.record() }
            case .handler(let handler): handler(change)
            }
        }

        func finish() {
            if case .stream(let continuation, _) = self { continuation.finish() }
        }
    }

    /// Opens the store, binds the sockets, contacts the seeds and starts the loop.
    public init(_ configuration: ReplicaConfiguration, logger: Logger? = nil) throws {
        self.configuration = configuration
        self.logger = logger ?? Logger(label: "replica.\(configuration.node)")
        let runtime = configuration.runtime
        if let runtime {
            instant = runtime.now
        } else {
            instant = { MonotonicInstant.now }
        }
        let now = instant()
        let duties = PeriodicDuties(
            intervals: .init(
                heartbeat: configuration.heartbeatInterval, beacon: configuration.discoveryPort == nil ? nil : configuration.beaconInterval,
                periodicSync: configuration.periodicSyncInterval, tombstoneSweep: configuration.tombstoneSweepInterval),
            now: now)
        codec = WireCodec(limits: configuration.limits)
        commitMetrics = CommitMetrics(node: configuration.node)
        var corruption: SQLiteStore.CorruptFileMovedAside?
        var damagedLog: SQLiteStore.DamagedLogMovedAside?
        var uncleanStart: UncleanStart?
        // A memory store is new at every start.
        var storeMayHaveForgotten = true
        // A start that fails once the store is open (a port in use) closes it as a clean stop:
        // nothing was published, and the next start keeps its counter slots.
        var opened: SQLiteStore?
        var started = false
        defer { if !started { opened?.closeForWriting() } }
        switch configuration.storage {
        case .memory:
            store = runtime?.store ?? MemoryStore(node: configuration.node)
        case .directory(let url):
            let sqlite = try SQLiteStore(directory: url, node: configuration.node, synchronous: configuration.synchronous)
            corruption = sqlite.recoveredFromCorruption
            damagedLog = sqlite.damagedLogMovedAside
            uncleanStart = sqlite.uncleanStart
            storeMayHaveForgotten = sqlite.created || sqlite.uncleanStart != nil || corruption != nil
            opened = sqlite
            store = sqlite
        }
        reader = try store.makeReader()
        let timestampAtStart = store.highestTimestamp
        let epoch = try store.beginEpoch(atLeast: configuration.wallClock())
        life = NodeLife(
            identity: store.identity, counterSlotOwner: store.counterSlotOwner, epoch: epoch, started: now,
            timestampAtStart: timestampAtStart)
        var clockCheck = ClockCheck(limit: configuration.maxClockDrift, grace: configuration.clockCheckGrace)
        // With seeds to compare with, local writes wait for the first clock comparison from the start.
        _ = clockCheck.evaluate(offsets: [], unmeasured: configuration.peers.isEmpty ? 0 : 1, now: instant())
        let health = NodeHealth(
            downAfter: configuration.downAfter,
            absence: AbsenceCheck(retentionMillis: configuration.tombstoneRetentionMillis, lastContact: try store.lastContact()))

        sockets = NodeSockets(factory: try runtime?.sockets ?? ZMQContext())
        let curve: CurveSecurity? = if case .curve(let settings) = configuration.security { settings } else { nil }
        admission = Admission(curve: curve)
        core = NodeCore(
            clock: HybridLogicalClock(
                maxDriftMillis: UInt64(configuration.maxClockDrift / .milliseconds(1)),
                startingAfter: store.highestTimestamp, physical: configuration.wallClock),
            clockCheck: clockCheck, forgottenStamps: ForgottenStamps(storeMayHaveForgotten: storeMayHaveForgotten),
            membership: Membership(
                local: MemberRecord(
                    node: configuration.node, epoch: epoch, incarnation: store.identity.incarnation, status: .active,
                    address: configuration.advertise ?? configuration.listen,
                    publicKey: curve.flatMap { CurveKeyPair.rawBytes(ofZ85: $0.keys.publicKey) }),
                departureRetention: configuration.tombstoneRetentionMillis,
                epochAllowance: max(configuration.maxClockDriftMillis, Membership.yearMillis)),
            own: OwnStream(epoch: epoch, retransmitWindow: configuration.retransmitWindow),
            duties: duties, housekeeping: HousekeepingSchedule(now: now), healthState: health)
        if curve != nil {
            // The ZAP handler must exist before any CURVE server socket accepts a connection.
            let authenticator = try sockets.factory.makeSocket(.rep)
            try authenticator.bind(Self.zapEndpoint)
            admission.authenticator = authenticator
        }
        let publisher = try sockets.factory.makeSocket(.xpub)
        // Queued per subscriber before PUB drops, whatever the subscriber does: with at most
        // `maxBatchBytes` in a published update or batch (larger values are repaired, not
        // published), a subscriber that never reads pins at most about 128 MiB. Well inside
        // the retransmit window, so a receiver that falls behind finds what it lost there.
        try publisher.setHighWaterMarks(send: Self.publishQueueDepth, receive: 1000)
        try publisher.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
        if let curve {
            try publisher.setCurveServer(curve.keys, zapDomain: Self.zapDomain)
            try publisher.reportEverySubscription()
        }
        try publisher.bind(configuration.listen.publishAddress)
        let syncServer = try sockets.factory.makeSocket(.router)
        try syncServer.setRouterMandatory(true)
        try syncServer.setMaxMessageSize(configuration.limits.deliveredFrameBytes)
        // Replies wait in a connection's queue only this many chunks deep (each at most
        // `maxChunkBytes`): a requester that does not read holds up its own reply, not memory.
        try syncServer.setHighWaterMarks(send: Self.replyQueueDepth, receive: 100)
        try syncServer.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
        if let curve { try syncServer.setCurveServer(curve.keys, zapDomain: Self.zapDomain) }
        try syncServer.bind(configuration.listen.syncAddress)
        // Insecure too: a CURVE node dialling this one (a cluster half moved to CURVE) is then
        // seen and named, rather than just never heard.
        admission.handshakeMonitors = [try HandshakeMonitor(watching: publisher), try HandshakeMonitor(watching: syncServer)]
        sockets.publisher = publisher
        sockets.syncServer = syncServer
        if let port = configuration.discoveryPort {
            sockets.beacon = try UDPBeaconSocket(port: port, interfaceAddress: configuration.listen.host)
        }
        if let corruption {
            core.healthState.reports.load(corruption.originalPath, corruption.description)
        }
        if let damagedLog {
            core.healthState.reports.load(damagedLog.originalPath, damagedLog.description)
        }
        if let uncleanStart {
            let message = "this start does not follow a clean stop of this store (\(uncleanStart)): counter increments go to a new slot "
                + "(\(store.counterSlotOwner.uuidString.lowercased())), so that those this disk may lack but members hold are not overwritten"
            self.logger.info("\(message)")
        }
        loop = runtime?.loop ?? PollLoop(name: "replica-\(configuration.node)")
        started = true
        // Whatever the cluster wrote while this node was away comes with one sync, from the
        // first member reached.
        core.planner.wantCatchUp(.startUp)
        loop.start(for: self)
    }

    deinit {
        // Writes submitted but never taken are answered, not dropped.
        for write in inbox.withLock({ $0.writes }) { write.completion.resume(throwing: ReplicaError.shutDown) }
        loop.ownerReleased()
    }

    static let zapEndpoint = "inproc://zeromq.zap.01"
    static let zapDomain = "replica"
    /// The first TCP connect attempt's limit; later ones adapt to the round trip (`LinkDialer`).
    static let connectTimeout: Duration = .seconds(1)
    /// Idle time before the kernel starts probing a silent TCP connection (then 3 probes, 1 s apart).
    static let keepaliveIdle: Duration = .seconds(5)
    static let maxConcurrentReplies = 16
    /// Chunks queued per requesting connection on the ROUTER before a reply waits.
    static let replyQueueDepth: Int32 = 8
    /// Messages queued per subscriber on the XPUB before it drops (each at most `maxBatchBytes`
    /// of entries, or a heartbeat).
    static let publishQueueDepth: Int32 = 2_000

    // MARK: Public API

    /// The current entry for `key` (a tombstone if it was removed), or nil if never written.
    public func entry(for key: String) throws -> Entry? {
        try store.entry(for: key)
    }

    /// Keys holding a value, in byte order.
    public func keys(prefix: String = "") throws -> [String] {
        try store.keys(prefix: prefix)
    }

    /// Writes `payload` (nil removes the key) and returns the entry once it is durably committed
    /// locally; it is published to peers right after. Throws `ReplicaError.saveFailed` if the
    /// store cannot commit (the write is then neither kept nor published).
    @discardableResult
    public func write(_ key: String, payload: [UInt8]?, schema: UInt16 = 0) async throws -> Entry {
        try await write([WriteRequest(key: key, payload: payload, schema: schema)])[0]
    }

    /// One key to write in a batch: `payload` nil removes the key (tombstone).
    public struct WriteRequest: Sendable, Equatable {
        public var key: String
        public var payload: [UInt8]?
        public var schema: UInt16
        public init(key: String, payload: [UInt8]?, schema: UInt16 = 0) {
            self.key = key
            self.payload = payload
            self.schema = schema
        }
    }

    /// Writes several keys in one commit (all or none) and returns their entries once durable.
    ///
    /// With `refusingNewerSchemaThan: n`, nothing is written and `SharingError.newerSchema` is
    /// thrown if any of the keys currently holds a value whose schema is above `n`: a program
    /// that knows only schema `n` must not overwrite data written by a newer one.
    @discardableResult
    public func write(_ batch: [WriteRequest], refusingNewerSchemaThan known: UInt16? = nil) async throws -> [Entry] {
        try validate(batch, refusingNewerSchemaThan: known)
        return try await enqueue(batch)
    }

    /// Queues a validated batch for the next commit and waits for it. Synchronous up to the
    /// wait: what the next write on this actor sees is queued.
    func enqueue(_ batch: [WriteRequest]) async throws -> [Entry] {
        guard !batch.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            core.commits.enqueue(CommitQueue.PendingWrite(requests: batch, completion: .continuation(continuation)))
        }
    }

    /// Fails writes that were queued but will not be committed. Counter increments among them
    /// were counted into the cached slot totals: those are read from the store again.
    func refuse(_ writes: [CommitQueue.PendingWrite], with error: (CommitQueue.PendingWrite) -> any Error) {
        guard !writes.isEmpty else { return }
        core.counterSlots.removeAll()
        for write in writes { write.completion.resume(throwing: error(write)) }
    }

    /// Throws what `write` throws before anything is queued: shut down, a skewed clock, a bad
    /// key, a value too large, a newer schema.
    func validate(_ batch: [WriteRequest], refusingNewerSchemaThan known: UInt16?) throws {
        guard !isShutDown else { throw ReplicaError.shutDown }
        // Left, or handing its writes over before it leaves.
        guard core.membership.local.status == .active, core.leaving == nil else { throw ReplicaError.leaving }
        try throwIfLocalWritesAreRefused()
        for request in batch {
            do {
                try configuration.limits.validate(key: request.key)
            } catch {
                // The reason without the codec's own "invalid key" (it read "invalid key: invalid key (empty)").
                let reason = switch error {
                case .invalidField(WireLimits.nulInKey): "it contains U+0000"
                case .invalidField(WireLimits.emptyKey): "it is empty"
                default: error.description
                }
                throw ReplicaError.invalidKey(reason)
            }
            if let payload = request.payload, payload.count > configuration.limits.maxPayloadBytes {
                throw ReplicaError.valueTooLarge(size: payload.count, limit: configuration.limits.maxPayloadBytes)
            }
            if let known { try refuseNewerSchema(request.key, known: known) }
        }
    }

    /// Throws `SharingError.newerSchema` if `key` holds a value of a schema above `known`.
    func refuseNewerSchema(_ key: String, known: UInt16) throws {
        if let stored = try store.entry(for: key), !stored.isTombstone, stored.schema > known {
            throw SharingError.newerSchema(key: FamilyKey.subject(of: key), stored: stored.schema, known: known)
        }
    }

    /// Entries (tombstones included) whose key starts with `prefix`, in key order.
    public func entries(prefix: String) throws -> [Entry] {
        try store.entries(prefix: prefix)
    }

    /// Changes applied after this call returns whose key starts with `prefix`, local and
    /// remote (of several versions of a key that arrive together, only the newest is applied,
    /// and seen). The stream keeps the newest `undeliveredChanges` (65,536) undelivered changes
    /// if its reader falls behind, and sets `lost` (if given) the moment it drops one: a reader
    /// that must not miss any checks it after each change (see `ChangeLoss`).
    public func changes(prefix: String = "", lost: ChangeLoss? = nil) -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: .bufferingNewest(configuration.undeliveredChanges))
        guard !isShutDown else {
            continuation.finish()
            return stream
        }
        let id = UUID()
        callers.observers[id] = Observer(prefix: prefix, receiver: .stream(continuation, lost))
        continuation.onTermination = { [weak self] _ in
            Task { await self?.stopObserving(id) }
        }
        return stream
    }

    /// Calls `handler` with every change applied after this call returns whose key starts with
    /// `prefix`, local and remote, on the replica's loop thread right after each commit: no task,
    /// no hop, no buffer (`changes(prefix:)` is the `AsyncStream` way). The handler runs inside
    /// the commit path, so it must be quick and must not block; it is never called after
    /// `stopObserving` or `shutdown` returns. Returns the id to stop with.
    public func observeChanges(prefix: String = "", handler: @escaping @Sendable (Change) -> Void) -> UUID {
        let id = UUID()
        if !isShutDown { callers.observers[id] = Observer(prefix: prefix, receiver: .handler(handler)) }
        return id
    }

    /// Stops the observer `id` (from `observeChanges`; a `changes` stream stops when its reader
    /// is done with it).
    public func stopObserving(_ id: UUID) { callers.observers[id] = nil }

    /// Keeps a copy of an entry that could not be decoded (see `ReplicaStore.quarantine`).
    public func quarantine(_ entry: Entry, reason: String) throws {
        try store.quarantine(entry, reason: reason)
    }

    public func quarantined(key: String) throws -> [QuarantinedEntry] {
        try store.quarantined(key: key)
    }

    /// Records a load error for `subject` (a key or file) until `clearLoadError` is called.
    public func reportLoadError(_ subject: String, message: String) {
        logLoadReport(subject, message, core.healthState.reports.load(subject, message))
    }

    public func clearLoadError(_ subject: String) {
        logLoadReport(subject, nil, core.healthState.reports.load(subject, nil))
    }

    private func logLoadReport(_ subject: String, _ message: String?, _ outcome: ProgramReports.Outcome) {
        switch outcome {
        case .unchanged: break
        case .reported: logger.error("load error", metadata: ["subject": "\(subject)", "error": "\(message ?? "")"])
        case .cleared: logger.info("load error cleared", metadata: ["subject": "\(subject)"])
        }
    }

    /// A ticket that orders what shared keys decide about a subject's load error or refused
    /// save: taken when they decide (a value could or could not be read, a save was or was not
    /// refused), since the report and the clearing then reach the actor in tasks of their own,
    /// in any order.
    nonisolated func problemTicket() -> UInt64 {
        inbox.withLock { inbox in
            inbox.lastProblemTicket += 1
            return inbox.lastProblemTicket
        }
    }

    /// Reports (`message`) or clears (nil) `subject`'s load error, unless something decided
    /// later (a higher ticket) about it already arrived: a good value read after a bad one is
    /// not undone by the bad one's report arriving last.
    func settleLoadError(_ subject: String, message: String?, ticket: UInt64) {
        logLoadReport(subject, message, core.healthState.reports.load(subject, message, ticket: ticket))
    }

    /// Stops replicating: commits what is queued, closes sockets, ends observer streams.
    /// The store stays readable. Idempotent. (To leave the cluster for good, `leave()` first.)
    public func shutdown() {
        guard !isShutDown else { return }
        takeSubmissions()
        flush()
        isShutDown = true
        // Writes the flush could not take (held for the clock check) are refused, not left waiting.
        refuse(core.commits.takeWrites()) { _ in ReplicaError.shutDown }
        if core.leaving != nil || !callers.leaveWaiters.isEmpty { finishLeaving(left: core.membership.local.status != .active) }
        sockets.publisher?.close()
        sockets.syncServer?.close()
        admission.authenticator?.close()
        sockets.beacon?.close()
        for monitor in admission.handshakeMonitors { monitor.socket.close() }
        sockets.publisher = nil
        sockets.syncServer = nil
        admission.authenticator = nil
        sockets.beacon = nil
        admission.handshakeMonitors = []
        for link in sockets.links.values { link.close() }
        sockets.links.removeAll()
        for seed in sockets.seeding.seeds { seed.close() }
        sockets.seeding.seeds.removeAll()
        sockets.pollItemsCache = nil
        for observer in callers.observers.values { observer.receiver.finish() }
        callers.observers.removeAll()
        saveMemberTable(now: instant(), force: true)
        saveUnsavedContact()
        if let unrecorded = store.closeForWriting() {
            logger.warning("the stop could not be recorded as clean (\(unrecorded)): the next start writes counter increments to a new slot")
        }
        logger.info("replica stopped")
    }
}
