import Foundation
import Logging

/// A running node: its store, clock, sockets and peers, owned by one actor.
///
/// The actor runs on its own `PollLoop` thread, which also waits on its ZeroMQ sockets. One
/// wake-up reads everything that arrived, stamps it, merges it together with the local writes
/// queued meanwhile in a single SQLite transaction (group commit), then publishes the local
/// writes and tells observers. A local write resumes its caller only after that commit.
public actor Replica: PollLoopOwner {
    public nonisolated let configuration: ReplicaConfiguration
    public nonisolated let identity: StoreIdentity
    /// Reads committed entries from any thread (synchronous loads of shared keys).
    public nonisolated let reader: any StoreReader
    nonisolated let loop: PollLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    let logger: Logger
    let codec: WireCodec
    let store: any ReplicaStore
    var clock: HybridLogicalClock
    let started = ContinuousClock.now

    // Sockets (nil once shut down).
    let context: ZMQContext
    var publisher: ZMQSocket?
    var syncServer: ZMQSocket?
    var peers: [PeerLink]
    public private(set) var isShutDown = false

    // Outgoing state.
    var sequence: UInt64 = 0
    var retransmit: RetransmitBuffer
    var nextRequestID: UInt64 = 1
    var pendingWrites: [PendingWrite] = []
    var inbound: [(entry: Entry, from: NodeID)] = []
    /// Sync replies being streamed, a few buckets per loop turn so they never stall writes.
    var syncResponses: [SyncResponse] = []

    /// Each connect attempt to a peer gives up after this (then retries 100 ms later, without
    /// back-off): a healed link is reconnected within about 0.6 s. Plenty for a LAN handshake.
    static let connectTimeout: Duration = .milliseconds(250)
    /// Idle time before the kernel starts probing a silent TCP connection (then 3 probes, 1 s apart).
    static let keepaliveIdle: Duration = .seconds(5)
    /// A socket whose handshake has not completed is re-dialled at this interval; one whose
    /// peer has gone silent (suspect) at `redialSilentEvery`.
    static let redialUnconnectedEvery: Duration = .milliseconds(300)
    static let redialSilentEvery: Duration = .seconds(1)

    // Timers.
    var nextHeartbeat = ContinuousClock.now
    var nextPeriodicSync: ContinuousClock.Instant

    // Observation and problems.
    var observers: [UUID: Observer] = [:]
    var loadErrors: [String: Problem] = [:]
    var saveErrors: [String: Problem] = [:]
    /// Saves of shared keys refused by this program (Sharing/Replica+Problems.swift).
    var refusedSaves: [String: Problem] = [:]
    var counters = ReplicaStatus.Counters()
    var refusedHandshakes: [String: ReplicaStatus.RefusedHandshake] = [:]

    // Authentication (CURVE only).
    let isCurve: Bool
    let trustedKeys: Set<[UInt8]>
    var authenticator: ZMQSocket?
    var handshakeMonitors: [HandshakeMonitor] = []

    // Counters and tombstones (Replica+Families.swift).
    /// This incarnation's counter slot totals, committed or queued: increments queued before a
    /// commit add to each other. Cleared when a commit fails (the store is then the truth).
    var counterSlots: [String: Int] = [:]
    var nextTombstoneSweep: ContinuousClock.Instant

    /// Local writes queued for the next commit; one continuation per `write` call (a batch is
    /// committed, or fails, as a whole).
    struct PendingWrite {
        var entries: [Entry]
        var continuation: CheckedContinuation<[Entry], any Error>
    }

    struct Observer {
        var prefix: String
        var continuation: AsyncStream<Change>.Continuation
    }

    /// Opens the store, binds and connects the sockets, and starts the loop.
    /// The first anti-entropy sync with every peer is requested at once.
    public init(_ configuration: ReplicaConfiguration, logger: Logger? = nil) throws {
        self.configuration = configuration
        self.logger = logger ?? Logger(label: "replica.\(configuration.node)")
        codec = WireCodec(limits: configuration.limits)
        var corruption: SQLiteStore.CorruptFileMovedAside?
        switch configuration.storage {
        case .memory:
            store = MemoryStore(node: configuration.node)
        case .directory(let url):
            let sqlite = try SQLiteStore(directory: url, node: configuration.node, synchronous: configuration.synchronous)
            corruption = sqlite.recoveredFromCorruption
            store = sqlite
        }
        identity = store.identity
        reader = try store.makeReader()
        clock = HybridLogicalClock(
            maxDriftMillis: UInt64(configuration.maxClockDrift / .milliseconds(1)),
            startingAfter: store.highestTimestamp)
        nextPeriodicSync = .now + configuration.periodicSyncInterval
        retransmit = RetransmitBuffer(capacity: configuration.retransmitWindow)
        nextTombstoneSweep = .now

        context = try ZMQContext()
        let maxMessage = configuration.limits.maxFrameBytes
        var curve: CurveSecurity?
        if case .curve(let settings) = configuration.security { curve = settings }
        isCurve = curve != nil
        trustedKeys = Set((curve?.trusted ?? []).compactMap(CurveKeyPair.rawBytes(ofZ85:)))
        if curve != nil {
            // The ZAP handler must exist before any CURVE server socket accepts a connection.
            let authenticator = try context.socket(.rep)
            try authenticator.bind(Self.zapEndpoint)
            self.authenticator = authenticator
        }
        let publisher = try context.socket(.pub)
        // Queued per subscriber before PUB drops: kept well inside the retransmit window, so a
        // receiver that falls behind finds what it lost still there to repair.
        try publisher.setHighWaterMarks(send: 20_000, receive: 1000)
        try publisher.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
        if let curve { try publisher.setCurveServer(curve.keys, zapDomain: Self.zapDomain) }
        try publisher.bind(configuration.listen.publishAddress)
        let syncServer = try context.socket(.router)
        try syncServer.setRouterMandatory()
        try syncServer.setMaxMessageSize(maxMessage)
        try syncServer.setHighWaterMarks(send: 10_000, receive: 1000)
        try syncServer.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
        if let curve { try syncServer.setCurveServer(curve.keys, zapDomain: Self.zapDomain) }
        try syncServer.bind(configuration.listen.syncAddress)
        if curve != nil {
            handshakeMonitors = [
                try HandshakeMonitor(watching: publisher),
                try HandshakeMonitor(watching: syncServer),
            ]
        }
        self.publisher = publisher
        self.syncServer = syncServer

        var links: [PeerLink] = []
        for endpoint in configuration.peers {
            let subscriber = try context.socket(.sub)
            try subscriber.setMaxMessageSize(maxMessage)
            // Bounds what a flooding peer can queue here: 10,000 messages of at most maxFrameBytes.
            try subscriber.setHighWaterMarks(send: 1000, receive: 10_000)
            try subscriber.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
            try subscriber.subscribe()
            try Self.secureClient(subscriber, to: endpoint, curve: curve)
            let publishAddress = Endpoint.connecting(to: endpoint.publishAddress, from: configuration.listen)
            let subscriberEvents = try subscriber.monitor([.handshakeSucceeded, .disconnected])
            try subscriber.connect(publishAddress)
            let dealer = try context.socket(.dealer)
            try dealer.setMaxMessageSize(maxMessage)
            try dealer.setHighWaterMarks(send: 10, receive: 10_000)
            try dealer.setClusterConnectionOptions(connectTimeout: Self.connectTimeout, keepaliveIdle: Self.keepaliveIdle)
            try Self.secureClient(dealer, to: endpoint, curve: curve)
            // Watch the DEALER's connection: a new handshake after a lost connection (healed
            // partition, restarted or resumed peer) starts a sync at once (Replica+Peers).
            let dealerEvents = try dealer.monitor([.handshakeSucceeded, .disconnected])
            let syncAddress = Endpoint.connecting(to: endpoint.syncAddress, from: configuration.listen)
            try dealer.connect(syncAddress)
            links.append(PeerLink(
                endpoint: endpoint, publishAddress: publishAddress, syncAddress: syncAddress, subscriber: subscriber,
                dealer: dealer, dealerEvents: dealerEvents, subscriberEvents: subscriberEvents,
                subscriberDialed: .now, dealerDialed: .now, syncWanted: true))
        }
        peers = links
        if let corruption {
            loadErrors[corruption.originalPath] = Problem(kind: .load, subject: corruption.originalPath, message: corruption.description)
        }
        loop = PollLoop(name: "replica-\(configuration.node)")
        loop.start(for: self)
    }

    deinit { loop.ownerReleased() }

    static let zapEndpoint = "inproc://zeromq.zap.01"
    static let zapDomain = "replica"

    /// A peer with no known public key cannot be connected to under CURVE.
    public struct MissingPeerKey: Error, CustomStringConvertible {
        public var peer: Endpoint
        public var description: String { "no public key is trusted for peer \(peer)" }
    }

    private static func secureClient(_ socket: ZMQSocket, to endpoint: Endpoint, curve: CurveSecurity?) throws {
        guard let curve else { return }
        guard let serverKey = curve.peerKeys[endpoint] else { throw MissingPeerKey(peer: endpoint) }
        try socket.setCurveClient(curve.keys, serverKey: serverKey)
    }

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
        guard !isShutDown else { throw ReplicaError.shutDown }
        guard !batch.isEmpty else { return [] }
        for request in batch {
            do {
                try configuration.limits.validate(key: request.key)
            } catch {
                throw ReplicaError.invalidKey(error.description)
            }
            if let payload = request.payload, payload.count > configuration.limits.maxPayloadBytes {
                throw ReplicaError.valueTooLarge(size: payload.count, limit: configuration.limits.maxPayloadBytes)
            }
            if let known { try refuseNewerSchema(request.key, known: known) }
        }
        let entries = batch.map { request in
            Entry(key: request.key, version: Version(timestamp: clock.tick(), node: identity.node), schema: request.schema, payload: request.payload)
        }
        return try await withCheckedThrowingContinuation { continuation in
            pendingWrites.append(PendingWrite(entries: entries, continuation: continuation))
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
    /// remote. The stream keeps the newest 65,536 undelivered changes if its reader falls behind.
    public func changes(prefix: String = "") -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: .bufferingNewest(65_536))
        guard !isShutDown else {
            continuation.finish()
            return stream
        }
        let id = UUID()
        observers[id] = Observer(prefix: prefix, continuation: continuation)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    private func removeObserver(_ id: UUID) { observers[id] = nil }

    /// Keeps a copy of an entry that could not be decoded (see `ReplicaStore.quarantine`).
    public func quarantine(_ entry: Entry, reason: String) throws {
        try store.quarantine(entry, reason: reason)
    }

    public func quarantined(key: String) throws -> [QuarantinedEntry] {
        try store.quarantined(key: key)
    }

    /// Records a load error for `subject` (a key or file) until `clearLoadError` is called.
    public func reportLoadError(_ subject: String, message: String) {
        if loadErrors[subject]?.message != message {
            logger.error("load error", metadata: ["subject": "\(subject)", "error": "\(message)"])
            loadErrors[subject] = Problem(kind: .load, subject: subject, message: message)
        }
    }

    public func clearLoadError(_ subject: String) {
        if loadErrors.removeValue(forKey: subject) != nil {
            logger.info("load error cleared", metadata: ["subject": "\(subject)"])
        }
    }

    /// Stops replicating: fails queued writes, closes sockets, ends observer streams.
    /// The store stays readable. Idempotent.
    public func shutdown() {
        guard !isShutDown else { return }
        flush()
        isShutDown = true
        publisher?.close()
        syncServer?.close()
        authenticator?.close()
        for monitor in handshakeMonitors { monitor.socket.close() }
        publisher = nil
        syncServer = nil
        authenticator = nil
        handshakeMonitors = []
        for peer in peers {
            peer.subscriber.close()
            peer.dealer.close()
            peer.dealerEvents.close()
            peer.subscriberEvents.close()
        }
        for observer in observers.values { observer.continuation.finish() }
        observers.removeAll()
        logger.info("replica stopped")
    }
}
