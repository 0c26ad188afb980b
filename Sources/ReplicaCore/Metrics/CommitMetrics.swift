import Metrics

/// What one group commit records through swift-metrics: its latency, its outcome and how many
/// entries it carried.
///
/// Called once per commit (`Replica.flush`), never per update: entry counts are added by batch
/// size, so a commit of 8,000 entries costs the same handful of metric calls as a commit of one.
/// Without a bootstrapped backend the handlers are swift-metrics' no-op ones.
struct CommitMetrics: Sendable {
    private let duration: Timer
    private let succeeded: Counter
    private let failed: Counter
    private let localEntries: Counter
    private let remoteEntries: Counter
    private let batchEntries: Recorder

    init(node: NodeID, factory: any MetricsFactory = MetricsSystem.factory) {
        let node = ("node", node.rawValue)
        duration = Timer(label: ReplicaMetricName.commitDuration, dimensions: [node], factory: factory)
        succeeded = Counter(label: ReplicaMetricName.commits, dimensions: [node, ("result", "ok")], factory: factory)
        failed = Counter(label: ReplicaMetricName.commits, dimensions: [node, ("result", "failed")], factory: factory)
        localEntries = Counter(label: ReplicaMetricName.committedEntries, dimensions: [node, ("origin", "local")], factory: factory)
        remoteEntries = Counter(label: ReplicaMetricName.committedEntries, dimensions: [node, ("origin", "remote")], factory: factory)
        batchEntries = Recorder(label: ReplicaMetricName.commitBatchEntries, dimensions: [node], aggregate: true, factory: factory)
    }

    /// Records one commit of `local` local and `remote` received entries that took `elapsed`.
    /// A failed commit (full or read-only disk) counts as failed and commits no entries.
    func record(elapsed: Duration, local: Int, remote: Int, succeeded ok: Bool) {
        duration.record(duration: elapsed)
        guard ok else {
            failed.increment()
            return
        }
        succeeded.increment()
        if local > 0 { localEntries.increment(by: local) }
        if remote > 0 { remoteEntries.increment(by: remote) }
        batchEntries.record(local + remote)
    }
}
