import Foundation
import MetricsTestKit
@testable import ReplicaCore
import Testing

/// `ReplicaMetricsReporter` and `CommitMetrics` against swift-metrics' test backend: counters grow
/// by what the status counters grew, peers get state and lag series, a peer that goes is removed.
struct MetricsReporterTests {
    func status(published: Int, malformed: Int, peers: [ReplicaStatus.Peer]) -> ReplicaStatus {
        var counters = ReplicaStatus.Counters()
        counters.updatesPublished = published
        counters.malformedDropped = malformed
        counters.syncBytesReceived = published * 10
        let problem = Problem(kind: .load, subject: "k", message: "bad")
        return ReplicaStatus(
            id: "n1", incarnation: "I", epoch: 1, listen: "127.0.0.1:1", advertise: "127.0.0.1:1", membership: "active", hlc: "1.0",
            uptimeSeconds: 5, entryCount: 12, liveEntryCount: 10, digest: "0", security: "insecure", peers: peers, pendingSeeds: [],
            refusedHandshakes: [], counters: counters, clock: .init(verdict: "agrees", medianOffsetMillis: 0, limitMillis: 60_000),
            problems: [problem], loadErrors: [problem], saveErrors: [])
    }

    func peer(_ id: String, _ state: PeerState, since: Date = Date(), missing: Int = 0, gaps: Int = 0, repairBytes: Int = 0) -> ReplicaStatus.Peer {
        ReplicaStatus.Peer(
            id: id, address: "127.0.0.1:7002", state: state, since: since, lastSeenSecondsAgo: 0.5, relayedBy: nil, epoch: 1,
            lastSequence: nil, inSync: true, sequenceGaps: gaps, syncsCompleted: 1, repairsCompleted: 0, syncInProgress: false,
            missingUpdates: missing, roundTripMillis: 2, clockOffsetMillis: -250, incarnation: "J", trusted: true,
            bytesReceived: .init(published: 100, sync: 0, repair: repairBytes), futureTimestampsRejected: 0, skewedHeartbeats: 0)
    }

    @Test func countersAddDeltasAndPeersGetLabelledSeries() throws {
        let metrics = TestMetrics()
        var reporter = ReplicaMetricsReporter(node: "n1", factory: metrics)
        reporter.update(from: status(published: 5, malformed: 1, peers: [peer("n2", .suspect, missing: 3)]))
        reporter.update(from: status(published: 12, malformed: 1, peers: [peer("n2", .alive, missing: 3, gaps: 2, repairBytes: 40)]))

        #expect(metrics.counterTotal(label: ReplicaMetricName.updatesPublished, dimensions: [("node", "n1")]) == 12)
        #expect(metrics.counterTotal(label: ReplicaMetricName.syncBytes, dimensions: [("node", "n1")]) == 120)
        #expect(metrics.counterTotal(label: ReplicaMetricName.repairBytes, dimensions: [("node", "n1")]) == 40)
        #expect(metrics.counterTotal(label: ReplicaMetricName.dropped, dimensions: [("node", "n1"), ("cause", "malformed")]) == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.loadErrors, [("node", "n1")]).lastValue == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.tombstones, [("node", "n1")]).lastValue == 2)

        let n2 = [("node", "n1"), ("peer", "n2")]
        #expect(try metrics.expectGauge(ReplicaMetricName.peerState, n2 + [("state", "alive")]).lastValue == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerState, n2 + [("state", "down")]).lastValue == 0)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerReplicationLag, n2).lastValue ?? 0 > 0, "missing since the first snapshot")
        #expect(try metrics.expectGauge(ReplicaMetricName.peerMissingUpdates, n2).lastValue == 3)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerClockOffset, n2).lastValue == -0.25)
        #expect(metrics.counterTotal(label: ReplicaMetricName.peerSequenceGaps, dimensions: n2) == 2)
        #expect(metrics.counterTotal(label: ReplicaMetricName.peerBytesReceived, dimensions: n2 + [("kind", "published")]) == 100)
        #expect(metrics.recorders(label: ReplicaMetricName.peerState).count == PeerState.allCases.count, "one series per state")

        reporter.update(from: status(published: 12, malformed: 1, peers: [peer("n2", .alive)]))
        #expect(try metrics.expectGauge(ReplicaMetricName.peerReplicationLag, n2).lastValue == 0, "caught up")

        reporter.update(from: status(published: 12, malformed: 1, peers: []))
        #expect(metrics.recorders(label: ReplicaMetricName.peerState).isEmpty, "a peer that left has no series")

        #expect(metrics.recorders(label: ReplicaMetricName.diskFree).allSatisfy { $0.lastValue == nil }, "no disk: nothing recorded")
        var onDisk = status(published: 12, malformed: 1, peers: [])
        onDisk.disk = DiskSpace(freeBytes: 3 << 30, totalBytes: 100 << 30)
        reporter.update(from: onDisk)
        #expect(try metrics.expectGauge(ReplicaMetricName.diskFree, [("node", "n1")]).lastValue == Double(3 << 30))
        #expect(try metrics.expectGauge(ReplicaMetricName.diskTotal, [("node", "n1")]).lastValue == Double(100 << 30))
    }

    /// A member seen leaving is reported as `left` for a while, then its series go; one already
    /// gone when first seen (a restart restores the table) gets none. A node that had seen a
    /// thousand members leave kept 16 series for each (16,730 in one scrape).
    @Test func aMemberThatLeftLosesItsSeriesAfterTheRetention() throws {
        let metrics = TestMetrics()
        var reporter = ReplicaMetricsReporter(node: "n1", factory: metrics)
        let retention = ReplicaMetricsReporter.leftSeriesRetention
        reporter.update(from: status(published: 1, malformed: 0, peers: [peer("recent", .alive), peer("long-ago", .alive), peer("down", .alive)]))
        reporter.update(from: status(published: 1, malformed: 0, peers: [
            peer("recent", .left, since: Date().addingTimeInterval(-retention / 2)),
            peer("long-ago", .left, since: Date().addingTimeInterval(-retention - 60)),
            peer("down", .down, since: Date().addingTimeInterval(-retention - 60)),
            peer("known-gone", .left, since: Date()),
        ]))
        func peersWithSeries() -> Set<String> {
            Set(metrics.recorders(label: ReplicaMetricName.peerState).compactMap { $0.dimensions.first { $0.0 == "peer" }?.1 })
        }
        #expect(peersWithSeries() == ["recent", "down"], "a member down for long stays: it may come back")
        #expect(try metrics.expectGauge(ReplicaMetricName.peerState, [("node", "n1"), ("peer", "recent"), ("state", "left")]).lastValue == 1)
    }

    /// Every kind of problem has a series, 0 when clear (a `store` or `identity` problem had
    /// no metric at all), and `replica_healthy` follows `health`.
    @Test func problemsAreCountedByKindAndHealthIsAGauge() throws {
        let metrics = TestMetrics()
        var reporter = ReplicaMetricsReporter(node: "n1", factory: metrics)
        var snapshot = status(published: 1, malformed: 0, peers: [])
        let store = Problem(kind: .store, subject: "replica.sqlite", message: "damaged")
        snapshot.problems.append(store)
        reporter.update(from: snapshot, health: ReplicaHealth(healthy: false, serving: true, problems: snapshot.problems))
        #expect(metrics.recorders(label: ReplicaMetricName.problems).count == Problem.Kind.allCases.count)
        func problems(_ kind: Problem.Kind) throws -> Double? {
            try metrics.expectGauge(ReplicaMetricName.problems, [("node", "n1"), ("kind", kind.rawValue)]).lastValue
        }
        #expect(try problems(.store) == 1 && problems(.load) == 1 && problems(.identity) == 0)
        #expect(try metrics.expectGauge(ReplicaMetricName.healthy, [("node", "n1")]).lastValue == 0)

        snapshot.problems.removeAll { $0.kind == .store }
        reporter.update(from: snapshot, health: ReplicaHealth(healthy: true, serving: true, problems: snapshot.problems))
        #expect(try problems(.store) == 0)
        #expect(try metrics.expectGauge(ReplicaMetricName.healthy, [("node", "n1")]).lastValue == 1)
    }

    @Test func commitsRecordLatencyOutcomeAndEntriesByBatch() throws {
        let metrics = TestMetrics()
        let commits = CommitMetrics(node: "n1", factory: metrics)
        commits.record(elapsed: .microseconds(300), local: 3, remote: 1000, succeeded: true)
        commits.record(elapsed: .milliseconds(2), local: 1, remote: 0, succeeded: false)
        #expect(try metrics.expectTimer(ReplicaMetricName.commitDuration, [("node", "n1")]).values == [300_000, 2_000_000])
        #expect(metrics.counterTotal(label: ReplicaMetricName.commits, dimensions: [("node", "n1"), ("result", "ok")]) == 1)
        #expect(metrics.counterTotal(label: ReplicaMetricName.commits, dimensions: [("node", "n1"), ("result", "failed")]) == 1)
        #expect(metrics.counterTotal(label: ReplicaMetricName.committedEntries, dimensions: [("node", "n1"), ("origin", "remote")]) == 1000)
        #expect(metrics.counterTotal(label: ReplicaMetricName.committedEntries, dimensions: [("node", "n1"), ("origin", "local")]) == 3)
    }
}
