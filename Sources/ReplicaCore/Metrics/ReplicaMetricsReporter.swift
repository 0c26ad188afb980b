import Foundation
import Metrics

/// Turns `ReplicaStatus` snapshots into swift-metrics counters and gauges, so that any backend a
/// program bootstraps (Prometheus in `replica-node serve --metrics`) sees rates, lag, drops,
/// peer states and errors.
///
/// The replica's own counters only grow; each snapshot adds what they grew by since the last one
/// to a swift-metrics `Counter`. Peer metrics carry a `peer` dimension and are destroyed when the
/// member leaves the snapshot (forgotten), or `leftSeriesRetention` after it left, so a backend
/// does not keep reporting a peer that is gone (a cluster that has seen a thousand members came
/// with 16 series each for every one of them). The commit path records its own latency histogram
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
    /// One series per kind of problem, every kind always reported (0 when clear), so an alert
    /// on a kind never sees a series appear or vanish.
    private let problems: [(kind: Problem.Kind, gauge: Gauge)]
    private let healthy: Gauge
    private let diskFree: Gauge
    private let diskTotal: Gauge
    private var info: Gauge?

    /// How long (seconds) a member that left keeps its series, `replica_peer_state{state="left"}`
    /// among them: long enough for a scrape and an alert to see the departure.
    public static let leftSeriesRetention: TimeInterval = 600

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
            total(Name.updateMessagesPublished) { $0.counters.updateMessagesPublished },
            total(Name.updatesApplied) { $0.counters.updatesApplied },
            total(Name.updatesRelayed) { $0.counters.updatesRelayed },
            total(Name.syncEntriesReceived) { $0.counters.syncEntriesReceived },
            total(Name.repairedUpdates) { $0.counters.repairedUpdates },
            total(Name.repairsUnavailable) { $0.counters.repairsUnavailable },
            total(Name.syncBytes) { $0.counters.syncBytesReceived },
            total(Name.repairBytes) { $0.peers.reduce(0) { $0 + $1.bytesReceived.repair } },
            total(Name.syncsServed) { $0.counters.syncRequestsServed },
            total(Name.syncRetriesResumed) { $0.counters.syncRetriesResumed },
            total(Name.syncEntriesLeftOut) { $0.counters.syncEntriesLeftOut },
            total(Name.repairsServed) { $0.counters.repairsServed },
            total(Name.tombstonesCollected) { $0.counters.tombstonesCollected },
            // Every way a message or a connection is refused, by cause.
            total(Name.dropped, [("cause", "malformed")]) { $0.counters.malformedDropped },
            total(Name.dropped, [("cause", "oversized")]) { $0.counters.oversizedDropped },
            total(Name.dropped, [("cause", "forged_origin")]) { $0.counters.forgedOriginsDropped },
            total(Name.dropped, [("cause", "future_timestamp")]) { $0.counters.futureTimestampsRejected },
            total(Name.dropped, [("cause", "skewed_heartbeat")]) { $0.counters.skewedHeartbeats },
            total(Name.dropped, [("cause", "failed_commit")]) { $0.counters.inboundDroppedOnFailedCommit },
            total(Name.dropped, [("cause", "expired_tombstone")]) { $0.counters.expiredTombstonesDropped },
            total(Name.dropped, [("cause", "sync_refused")]) { $0.counters.syncRequestsRefused },
            total(Name.dropped, [("cause", "failed_handshake")]) { $0.counters.handshakesFailed },
            total(Name.dropped, [("cause", "untrusted_key")]) { $0.counters.untrustedHandshakesRefused },
            total(Name.dropped, [("cause", "revoked_key")]) { $0.counters.revokedConnectionsEnded },
            total(Name.dropped, [("cause", "member_record")]) { $0.counters.memberRecordsRefused },
        ]
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: [node], factory: factory) }
        entries = gauge(Name.entries)
        tombstones = gauge(Name.tombstones)
        uptime = gauge(Name.uptime)
        loadErrors = gauge(Name.loadErrors)
        saveErrors = gauge(Name.saveErrors)
        problems = Problem.Kind.allCases.map { kind in
            (kind, Gauge(label: Name.problems, dimensions: [node, ("kind", kind.rawValue)], factory: factory))
        }
        healthy = gauge(Name.healthy)
        diskFree = gauge(Name.diskFree)
        diskTotal = gauge(Name.diskTotal)
    }

    /// Reports `replica`'s status every `interval` until the task is cancelled.
    public static func run(for replica: Replica, every interval: Duration = .seconds(1), factory: any MetricsFactory = MetricsSystem.factory) async {
        var reporter = ReplicaMetricsReporter(node: replica.configuration.node, factory: factory)
        while !Task.isCancelled {
            reporter.update(from: await replica.status(), health: await replica.health())
            try? await Task.sleep(for: interval)
        }
    }

    /// Records one snapshot: counters grow by what the replica's counters grew since the last
    /// call, gauges take the snapshot's values; `replica_healthy` is recorded when `health` is given.
    public mutating func update(from status: ReplicaStatus, health: ReplicaHealth? = nil) {
        for index in totals.indices { totals[index].update(from: status) }
        entries.record(status.liveEntryCount)
        tombstones.record(status.entryCount - status.liveEntryCount)
        uptime.record(status.uptimeSeconds)
        loadErrors.record(status.loadErrors.count)
        saveErrors.record(status.saveErrors.count)
        for (kind, gauge) in problems {
            gauge.record(status.problems.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) })
        }
        if let health { healthy.record(health.healthy ? 1 : 0) }
        if let disk = status.disk {
            diskFree.record(Int64(clamping: disk.freeBytes))
            diskTotal.record(Int64(clamping: disk.totalBytes))
        }
        if info == nil {
            let labels = [node, ("incarnation", status.incarnation), ("security", status.security)]
            info = Gauge(label: ReplicaMetricName.info, dimensions: labels, factory: factory)
            info?.record(1)
        }

        var seen: Set<String> = []
        let now = ContinuousClock.now
        let wall = Date()
        for peer in status.peers {
            // A member seen leaving keeps its series for the retention; one already gone when
            // first seen (a restart restores the table of departed members) gets none.
            if peer.state == .left && (peers[peer.id] == nil || wall.timeIntervalSince(peer.since) > Self.leftSeriesRetention) { continue }
            seen.insert(peer.id)
            if peers[peer.id] == nil { peers[peer.id] = PeerSeries(node: node, peer: peer.id, factory: factory) }
            peers[peer.id]?.update(from: peer, now: now)
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
    private let dimensions: [(String, String)]
    /// One 0/1 series per state, so that a query for any state finds one.
    private let states: [(state: PeerState, gauge: Gauge)]
    private let inSync: Gauge
    private let lastSeen: Gauge
    private let lag: Gauge
    private let missing: Gauge
    private let clockOffset: Gauge
    private let roundTrip: Gauge
    private var totals: [Cumulative<ReplicaStatus.Peer>]
    /// When a snapshot first showed this peer's updates missing (nil: none missing).
    private var missingSince: ContinuousClock.Instant?

    init(node: (String, String), peer: String, factory: any MetricsFactory) {
        let dimensions = [node, ("peer", peer)]
        self.dimensions = dimensions
        inSync = Gauge(label: ReplicaMetricName.peerInSync, dimensions: dimensions, factory: factory)
        lastSeen = Gauge(label: ReplicaMetricName.peerLastSeen, dimensions: dimensions, factory: factory)
        lag = Gauge(label: ReplicaMetricName.peerReplicationLag, dimensions: dimensions, factory: factory)
        missing = Gauge(label: ReplicaMetricName.peerMissingUpdates, dimensions: dimensions, factory: factory)
        clockOffset = Gauge(label: ReplicaMetricName.peerClockOffset, dimensions: dimensions, factory: factory)
        roundTrip = Gauge(label: ReplicaMetricName.peerRoundTrip, dimensions: dimensions, factory: factory)
        func total(_ label: String, _ extra: [(String, String)] = [], _ read: @escaping @Sendable (ReplicaStatus.Peer) -> Int)
            -> Cumulative<ReplicaStatus.Peer> {
            Cumulative(counter: Counter(label: label, dimensions: dimensions + extra, factory: factory), read: read)
        }
        totals = [
            total(ReplicaMetricName.peerSequenceGaps) { $0.sequenceGaps },
            total(ReplicaMetricName.peerSyncsCompleted) { $0.syncsCompleted },
            total(ReplicaMetricName.peerRepairsCompleted) { $0.repairsCompleted },
            total(ReplicaMetricName.peerBytesReceived, [("kind", "published")]) { $0.bytesReceived.published },
            total(ReplicaMetricName.peerBytesReceived, [("kind", "sync")]) { $0.bytesReceived.sync },
            total(ReplicaMetricName.peerBytesReceived, [("kind", "repair")]) { $0.bytesReceived.repair },
        ]
        states = PeerState.allCases.map { state in
            (state, Gauge(label: ReplicaMetricName.peerState, dimensions: dimensions + [("state", state.rawValue)], factory: factory))
        }
    }

    mutating func update(from peer: ReplicaStatus.Peer, now: ContinuousClock.Instant) {
        for (state, gauge) in states { gauge.record(state == peer.state ? 1 : 0) }
        inSync.record(peer.inSync ? 1 : 0)
        // Never heard: no age to report (a huge number would distort averages).
        if let seconds = peer.lastSeenSecondsAgo { lastSeen.record(seconds) }
        // Replication lag: how long updates of this peer have been known missing, from the
        // snapshots (so to the reporting interval); 0 when none are.
        if peer.missingUpdates == 0 {
            missingSince = nil
        } else if missingSince == nil {
            missingSince = now
        }
        lag.record(missingSince.map { (now - $0) / .seconds(1) } ?? 0)
        missing.record(peer.missingUpdates)
        if let offset = peer.clockOffsetMillis { clockOffset.record(Double(offset) / 1000) }
        if let millis = peer.roundTripMillis { roundTrip.record(millis / 1000) }
        for index in totals.indices { totals[index].update(from: peer) }
    }

    func destroy() {
        for (_, gauge) in states { gauge.destroy() }
        for gauge in [inSync, lastSeen, lag, missing, clockOffset, roundTrip] { gauge.destroy() }
        for total in totals { total.counter.destroy() }
    }
}
