import Foundation

/// A snapshot of a replica for `replica-node status` (and its `--json`).
public struct ReplicaStatus: Sendable, Codable, Equatable {
    public struct Peer: Sendable, Codable, Equatable {
        public var address: String
        public var id: String?
        public var state: PeerState
        /// Seconds since the peer was last heard (nil: never), and that moment as a time.
        public var lastSeenSecondsAgo: Double?
        public var lastSeen: Date?
        public var lastSequence: UInt64?
        /// The peer's last advertised digest equals ours.
        public var inSync: Bool
        public var sequenceGaps: Int
        public var syncsCompleted: Int
        /// Lost-update repairs completed with this peer (see docs/operations.md).
        public var repairsCompleted: Int
        public var syncInProgress: Bool
        /// Seconds since this node first learned it lacks updates the peer published (a
        /// sequence gap) and has not got them back yet by repair or sync; 0 when caught up.
        public var replicationLagSeconds: Double
        /// Updates of this peer known lost and not yet repaired.
        public var missingUpdates: Int
        /// The peer's clock minus ours, in seconds, from the timestamp of its last heartbeat
        /// (transit time not subtracted; nil before the first heartbeat). A hybrid logical
        /// clock follows the highest time it has seen, so a peer behind us that receives our
        /// writes shows about 0.
        public var clockOffsetSeconds: Double?
    }

    public struct Counters: Sendable, Codable, Equatable {
        public var malformedDropped = 0
        public var futureTimestampsRejected = 0
        public var updatesPublished = 0
        public var updatesApplied = 0
        public var syncEntriesApplied = 0
        public var syncBytesReceived = 0
        /// Sync reply bytes sent to peers; repair bytes received and sent.
        public var syncBytesSent = 0
        public var repairBytesReceived = 0
        public var repairBytesSent = 0
        public var syncRequestsServed = 0
        /// Lost updates received again from their publisher's retransmit buffer, and repair
        /// requests this node answered.
        public var repairedUpdates = 0
        public var repairsServed = 0
        /// Tombstones deleted after `tombstoneRetention`, and expired ones received and ignored.
        public var tombstonesCollected = 0
        public var expiredTombstonesDropped = 0
        /// Sync requests refused because too many replies were already being streamed.
        public var syncRequestsRefused = 0
        /// Handshakes that failed before authentication (wrong mechanism, garbage greeting).
        public var handshakesFailed = 0
    }

    /// Connections refused by the ZAP handler (unknown CURVE key), per address.
    public struct RefusedHandshake: Sendable, Codable, Equatable {
        public var address: String
        public var publicKey: String?
        public var count: Int
        public var last: Date
    }

    public var id: String
    public var incarnation: String
    public var listen: String
    public var hlc: String
    public var uptimeSeconds: Double
    public var entryCount: Int
    public var liveEntryCount: Int
    /// The root of the store digest, hex. Equal digests mean equal replicated state.
    public var digest: String
    /// "curve" or "insecure".
    public var security: String
    public var peers: [Peer]
    public var refusedHandshakes: [RefusedHandshake]
    public var counters: Counters
    public var loadErrors: [Problem]
    public var saveErrors: [Problem]
}
