/// The name of every metric a replica reports through swift-metrics (with a Prometheus backend
/// these are the exposed names). Every metric carries a `node` dimension with the replica's id;
/// per-peer metrics also carry `peer` (the member's id).
/// docs/operations.md, "Metrics", describes each one with a sample query.
public enum ReplicaMetricName {
    // Recorded by the commit itself (`CommitMetrics`).
    public static let commitDuration = "replica_commit_duration_seconds"
    public static let commits = "replica_commits_total"
    public static let committedEntries = "replica_committed_entries_total"
    public static let commitBatchEntries = "replica_commit_batch_entries"

    // Recorded from status snapshots (`ReplicaMetricsReporter`).
    public static let updatesPublished = "replica_updates_published_total"
    public static let updateMessagesPublished = "replica_update_messages_published_total"
    public static let updatesApplied = "replica_updates_applied_total"
    public static let updatesRelayed = "replica_updates_relayed_total"
    public static let syncEntriesReceived = "replica_sync_entries_received_total"
    public static let repairedUpdates = "replica_repaired_updates_total"
    public static let syncBytes = "replica_sync_bytes_total"
    public static let repairBytes = "replica_repair_bytes_total"
    public static let syncsServed = "replica_syncs_served_total"
    public static let syncRetriesResumed = "replica_sync_retries_resumed_total"
    public static let syncEntriesLeftOut = "replica_sync_entries_left_out_total"
    public static let repairsServed = "replica_repairs_served_total"
    public static let repairsUnavailable = "replica_repairs_unavailable_total"
    public static let dropped = "replica_dropped_total"
    public static let tombstonesCollected = "replica_tombstones_collected_total"
    public static let entries = "replica_entries"
    public static let tombstones = "replica_tombstones"
    public static let uptime = "replica_uptime_seconds"
    public static let loadErrors = "replica_load_errors"
    public static let saveErrors = "replica_save_errors"
    public static let info = "replica_info"
    public static let problems = "replica_problems"
    public static let healthy = "replica_healthy"
    public static let diskFree = "replica_disk_free_bytes"
    public static let diskTotal = "replica_disk_size_bytes"

    public static let peerState = "replica_peer_state"
    public static let peerInSync = "replica_peer_in_sync"
    public static let peerLastSeen = "replica_peer_last_seen_seconds"
    public static let peerReplicationLag = "replica_peer_replication_lag_seconds"
    public static let peerMissingUpdates = "replica_peer_missing_updates"
    public static let peerClockOffset = "replica_peer_clock_offset_seconds"
    public static let peerRoundTrip = "replica_peer_round_trip_seconds"
    public static let peerBytesReceived = "replica_peer_bytes_received_total"
    public static let peerSequenceGaps = "replica_peer_sequence_gaps_total"
    public static let peerSyncsCompleted = "replica_peer_syncs_completed_total"
    public static let peerRepairsCompleted = "replica_peer_repairs_completed_total"
}
