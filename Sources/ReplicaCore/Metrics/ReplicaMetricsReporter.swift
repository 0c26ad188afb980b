import Metrics

/// Turns `ReplicaStatus` snapshots into swift-metrics counters and gauges, so that any backend a
/// program bootstraps (Prometheus in `replica-node serve --metrics`) sees rates, lag, drops,
/// peer states and errors.
///
/// The replica's own counters only grow; each snapshot adds what they grew by since the last one
/// to a swift-metrics `Counter`. Peer metrics carry a `peer` dimension and are destroyed when the
/// peer leaves the snapshot (or becomes known by id instead of address), so a backend does not
/// keep reporting a peer that is gone. The commit path records its own latency histogram
/// (`CommitMetrics`); everything here costs one `status()` call per interval.
///
/// ```swift
/// MetricsSystem.bootstrap(myFactory)   // before creating the replica
/// let replica = try Replica(configuration)
/// Task { await ReplicaMetricsReporter.run(for: replica) }
/// ```
public struct ReplicaMetricsReporter: Sendable {
    private let node: (String, String)
    private let factory: any MetricsFactory
    private var totals: [Cumulative<ReplicaStatus>]
    private var peers: [String: PeerSeries] = [:]
    private let entries: Gauge
    private let tombstones: Gauge
    private let uptime: Gauge
    private let loadErrors: Gauge
    private let saveErrors: Gauge
    private var info: Gauge?

    public init(node: NodeID, factory: any MetricsFactory = MetricsSystem.factory) {
        let node = ("node", node.rawValue)
        self.node = node
        self.factory = factory
        func total(_ label: String, _ extra: [(String, String)] = [], _ read: @escaping @Sendable (ReplicaStatus) -> Int) -> Cumulative<ReplicaStatus> {
            Cumulative(counter: Counter(label: label, dimensions: [node] + extra, factory: factory), read: read)
        }
        typealias Name = ReplicaMetricName
        totals = [
            total(Name.updatesPublished) { $0.counters.updatesPublished },
            total(Name.updatesApplied) { $0.counters.updatesApplied },
            total(Name.syncEntriesReceived) { $0.counters.syncEntriesApplied },
            total(Name.repairedUpdates) { $0.counters.repairedUpdates },
            total(Name.syncBytes, [("direction", "received")]) { $0.counters.syncBytesReceived },
            total(Name.syncBytes, [("direction", "sent")]) { $0.counters.syncBytesSent },
            total(Name.repairBytes, [("direction", "received")]) { $0.counters.repairBytesReceived },
            total(Name.repairBytes, [("direction", "sent")]) { $0.counters.repairBytesSent },
            total(Name.syncsServed) { $0.counters.syncRequestsServed },
            total(Name.repairsServed) { $0.counters.repairsServed },
            total(Name.tombstonesCollected) { $0.counters.tombstonesCollected },
            // Every way a message or a connection is refused, by cause.
            total(Name.dropped, [("cause", "malformed")]) { $0.counters.malformedDropped },
            total(Name.dropped, [("cause", "future_timestamp")]) { $0.counters.futureTimestampsRejected },
            total(Name.dropped, [("cause", "expired_tombstone")]) { $0.counters.expiredTombstonesDropped },
            total(Name.dropped, [("cause", "sync_refused")]) { $0.counters.syncRequestsRefused },
            total(Name.dropped, [("cause", "failed_handshake")]) { $0.counters.handshakesFailed },
            total(Name.dropped, [("cause", "untrusted_key")]) { $0.refusedHandshakes.reduce(0) { $0 + $1.count } },
        ]
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: [node], factory: factory) }
        entries = gauge(Name.entries)
        tombstones = gauge(Name.tombstones)
        uptime = gauge(Name.uptime)
        loadErrors = gauge(Name.loadErrors)
        saveErrors = gauge(Name.saveErrors)
    }

    /// Reports `replica`'s status every `interval` until the task is cancelled.
    public static func run(for replica: Replica, every interval: Duration = .seconds(1), factory: any MetricsFactory = MetricsSystem.factory) async {
        var reporter = ReplicaMetricsReporter(node: replica.configuration.node, factory: factory)
        while !Task.isCancelled {
            reporter.update(from: await replica.status())
            try? await Task.sleep(for: interval)
        }
    }

    /// Records one snapshot: counters grow by what the replica's counters grew since the last
    /// call, gauges take the snapshot's values.
    public mutating func update(from status: ReplicaStatus) {
        for index in totals.indices { totals[index].update(from: status) }
        entries.record(status.liveEntryCount)
        tombstones.record(status.entryCount - status.liveEntryCount)
        uptime.record(status.uptimeSeconds)
        loadErrors.record(status.loadErrors.count)
        saveErrors.record(status.saveErrors.count)
        if info == nil {
            let labels = [node, ("incarnation", status.incarnation), ("security", status.security)]
            info = Gauge(label: ReplicaMetricName.info, dimensions: labels, factory: factory)
            info?.record(1)
        }

        var seen: Set<String> = []
        for peer in status.peers {
            let label = peer.id ?? peer.address
            seen.insert(label)
            if peers[label] == nil { peers[label] = PeerSeries(node: node, peer: label, factory: factory) }
            peers[label]?.update(from: peer)
        }
        for (label, series) in peers where !seen.contains(label) {
            series.destroy()
            peers[label] = nil
        }
    }
}

/// A swift-metrics counter fed from a cumulative count in the status: it grows by what the
/// count grew since the last snapshot (of a replica, or of one peer).
private struct Cumulative<Snapshot>: Sendable {
    let counter: Counter
    let read: @Sendable (Snapshot) -> Int
    var reported = 0

    mutating func update(from snapshot: Snapshot) {
        let count = read(snapshot)
        if count > reported { counter.increment(by: count - reported) }
        reported = count
    }
}

/// The metrics of one peer.
private struct PeerSeries: Sendable {
    /// States a peer can be in; each gets a 0/1 series so that a query for any of them finds
    /// one (a state this list lacks still gets its series once a peer is in it).
    private static let knownStates = ["unknown", "alive", "suspect", "down", "left"]

    private let dimensions: [(String, String)]
    private let factory: any MetricsFactory
    private var states: [String: Gauge] = [:]
    private let inSync: Gauge
    private let lastSeen: Gauge
    private let lag: Gauge
    private let missing: Gauge
    private let clockOffset: Gauge
    private var totals: [Cumulative<ReplicaStatus.Peer>]

    init(node: (String, String), peer: String, factory: any MetricsFactory) {
        let dimensions = [node, ("peer", peer)]
        self.dimensions = dimensions
        self.factory = factory
        inSync = Gauge(label: ReplicaMetricName.peerInSync, dimensions: dimensions, factory: factory)
        lastSeen = Gauge(label: ReplicaMetricName.peerLastSeen, dimensions: dimensions, factory: factory)
        lag = Gauge(label: ReplicaMetricName.peerReplicationLag, dimensions: dimensions, factory: factory)
        missing = Gauge(label: ReplicaMetricName.peerMissingUpdates, dimensions: dimensions, factory: factory)
        clockOffset = Gauge(label: ReplicaMetricName.peerClockOffset, dimensions: dimensions, factory: factory)
        func total(_ label: String, _ read: @escaping @Sendable (ReplicaStatus.Peer) -> Int) -> Cumulative<ReplicaStatus.Peer> {
            Cumulative(counter: Counter(label: label, dimensions: dimensions, factory: factory), read: read)
        }
        totals = [
            total(ReplicaMetricName.peerSequenceGaps) { $0.sequenceGaps },
            total(ReplicaMetricName.peerSyncsCompleted) { $0.syncsCompleted },
            total(ReplicaMetricName.peerRepairsCompleted) { $0.repairsCompleted },
        ]
        for state in Self.knownStates { states[state] = stateGauge(state) }
    }

    private func stateGauge(_ state: String) -> Gauge {
        Gauge(label: ReplicaMetricName.peerState, dimensions: dimensions + [("state", state)], factory: factory)
    }

    mutating func update(from peer: ReplicaStatus.Peer) {
        let current = peer.state.rawValue
        if states[current] == nil { states[current] = stateGauge(current) }
        for (state, gauge) in states { gauge.record(state == current ? 1 : 0) }
        inSync.record(peer.inSync ? 1 : 0)
        // Never heard: no age to report (a huge number would distort averages).
        if let seconds = peer.lastSeenSecondsAgo { lastSeen.record(seconds) }
        lag.record(peer.replicationLagSeconds)
        missing.record(peer.missingUpdates)
        if let offset = peer.clockOffsetSeconds { clockOffset.record(offset) }
        for index in totals.indices { totals[index].update(from: peer) }
    }

    func destroy() {
        for gauge in states.values { gauge.destroy() }
        for gauge in [inSync, lastSeen, lag, missing, clockOffset] { gauge.destroy() }
        for total in totals { total.counter.destroy() }
    }
}
