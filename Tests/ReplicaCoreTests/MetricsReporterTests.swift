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
        return ReplicaStatus(
            id: "n1", incarnation: "I", listen: "127.0.0.1:1", hlc: "1.0", uptimeSeconds: 5, entryCount: 12,
            liveEntryCount: 10, digest: "0", security: "insecure", peers: peers, refusedHandshakes: [], counters: counters,
            loadErrors: [Problem(kind: .load, subject: "k", message: "bad")], saveErrors: [])
    }

    func peer(_ id: String?, _ state: PeerState, lag: Double = 0, gaps: Int = 0) -> ReplicaStatus.Peer {
        ReplicaStatus.Peer(
            address: "127.0.0.1:7002", id: id, state: state, lastSeenSecondsAgo: 0.5, lastSeen: Date(), lastSequence: nil,
            inSync: true, sequenceGaps: gaps, syncsCompleted: 1, repairsCompleted: 0, syncInProgress: false,
            replicationLagSeconds: lag, missingUpdates: 0, clockOffsetSeconds: -0.25)
    }

    @Test func countersAddDeltasAndPeersGetLabelledSeries() throws {
        let metrics = TestMetrics()
        var reporter = ReplicaMetricsReporter(node: "n1", factory: metrics)
        reporter.update(from: status(published: 5, malformed: 1, peers: [peer(nil, .unknown)]))
        reporter.update(from: status(published: 12, malformed: 1, peers: [peer("n2", .alive, lag: 1.5, gaps: 2)]))

        #expect(metrics.counterTotal(label: ReplicaMetricName.updatesPublished, dimensions: [("node", "n1")]) == 12)
        #expect(metrics.counterTotal(label: ReplicaMetricName.syncBytes, dimensions: [("node", "n1"), ("direction", "received")]) == 120)
        #expect(metrics.counterTotal(label: ReplicaMetricName.dropped, dimensions: [("node", "n1"), ("cause", "malformed")]) == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.loadErrors, [("node", "n1")]).lastValue == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.tombstones, [("node", "n1")]).lastValue == 2)

        let n2 = [("node", "n1"), ("peer", "n2")]
        #expect(try metrics.expectGauge(ReplicaMetricName.peerState, n2 + [("state", "alive")]).lastValue == 1)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerState, n2 + [("state", "down")]).lastValue == 0)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerReplicationLag, n2).lastValue == 1.5)
        #expect(try metrics.expectGauge(ReplicaMetricName.peerClockOffset, n2).lastValue == -0.25)
        #expect(metrics.counterTotal(label: ReplicaMetricName.peerSequenceGaps, dimensions: n2) == 2)
        // Known by its address until heard, then by id: the address series is gone.
        let byAddress = [("node", "n1"), ("peer", "127.0.0.1:7002"), ("state", "unknown")]
        #expect(metrics.recorders(label: ReplicaMetricName.peerState, dimensions: byAddress).isEmpty)
        #expect(metrics.recorders(label: ReplicaMetricName.peerState).count == 5, "one series per state, for n2 alone")

        reporter.update(from: status(published: 12, malformed: 1, peers: []))
        #expect(metrics.recorders(label: ReplicaMetricName.peerState).isEmpty, "a peer that left has no series")
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
