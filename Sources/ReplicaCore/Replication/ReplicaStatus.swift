import Foundation

/// A snapshot of a replica for `replica-node status` (and its `--json`).
public struct ReplicaStatus: Sendable, Codable, Equatable {
    /// A digest root as `status` shows it and docs/protocol.md writes it: 16 lowercase hex
    /// digits, leading zeros kept, so that roots line up and compare as text.
    public static func digestText(_ root: UInt64) -> String {
        let digits = String(root, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// One member as this node sees it.
    public struct Peer: Sendable, Codable, Equatable {
        public var id: String
        /// Where it is dialled (its advertised address).
        public var address: String
        /// alive, suspect, down or left.
        public var state: PeerState
        /// When it entered that state.
        public var since: Date
        /// Seconds since it was last heard on its own connections (nil: never).
        public var lastSeenSecondsAgo: Double?
        /// The member through which its updates reach us when we cannot hear it (a relay).
        public var relayedBy: String?
        /// Its update stream: the epoch (process life) and how far it has been received.
        public var epoch: UInt64
        public var lastSequence: UInt64?
        /// The peer's last advertised digest equals ours, and that heartbeat is recent (heard
        /// within its suspect time: `suspectAfter`, longer on a slow link, as for `state`). A member heard only through a relay, or silent, is not known
        /// to be in sync: its heartbeats are not relayed, so its last one may be long stale.
        public var inSync: Bool
        public var sequenceGaps: Int
        public var syncsCompleted: Int
        /// Lost-update repairs completed with this peer (see docs/operations.md).
        public var repairsCompleted: Int
        public var syncInProgress: Bool
        /// Its updates known lost and not yet received again (being repaired, or waiting for a
        /// repair or a sync). Metrics report how long this stays above 0 as replication lag.
        public var missingUpdates: Int
        /// The smoothed round trip and the estimated offset of its clock from ours (its minus
        /// ours), from heartbeat echoes; nil until measured.
        public var roundTripMillis: Double?
        public var clockOffsetMillis: Int64?
        /// Its store incarnation (new when its data directory is new).
        public var incarnation: String
        /// Under CURVE: whether its key is trusted here (an untrusted member is not dialled).
        public var trusted: Bool
        /// Bytes received from it: published (updates, heartbeats, announcements, relays),
        /// full syncs, and repairs.
        public var bytesReceived: Bytes
        /// Entries it wrote that were refused for a timestamp too far ahead of our clock, and its
        /// heartbeats taken for liveness only for the same reason.
        public var futureTimestampsRejected: Int
        public var skewedHeartbeats: Int

        public struct Bytes: Sendable, Codable, Equatable {
            public var published: Int
            public var sync: Int
            public var repair: Int
        }
    }

    /// Every drop is counted by its cause (see docs/operations.md, "Drops").
    public struct Counters: Sendable, Codable, Equatable {
        /// Messages that failed the codec's checks (docs/protocol.md).
        public var malformedDropped = 0
        /// Messages larger than the frame limit that libzmq still delivered (up to 4 x the limit;
        /// libzmq itself disconnects a peer that sends more, without saying why).
        public var oversizedDropped = 0
        /// Messages on a member's connection that claimed another origin.
        public var forgedOriginsDropped = 0
        /// Entries refused for a timestamp beyond `maxClockDrift` ahead of our clock.
        public var futureTimestampsRejected = 0
        /// Heartbeats from members whose clocks are beyond the limit ahead: used for liveness
        /// and clock measurement only.
        public var skewedHeartbeats = 0
        public var updatesPublished = 0
        /// Messages that carried them: a single update or a batch (updates per message is how
        /// well commits batch; see docs/protocol.md, kind 8).
        public var updateMessagesPublished = 0
        public var updatesApplied = 0
        /// Updates of other members passed on to members that cannot hear them.
        public var updatesRelayed = 0
        /// Entries received in full syncs (applied or not: most may be known already).
        public var syncEntriesReceived = 0
        public var syncBytesReceived = 0
        public var syncRequestsServed = 0
        /// Lost updates received again from their publisher's retransmit buffer, and repair
        /// requests this node answered.
        public var repairedUpdates = 0
        public var repairsServed = 0
        /// Repair answers saying the lost updates are no longer held (they left the publisher's
        /// retransmit buffer, or the range was longer than a repair carries): those losses were
        /// brought by a catch-up sync instead. A steady rise says links stay down longer than the
        /// buffer lasts.
        public var repairsUnavailable = 0
        /// Tombstones deleted after `tombstoneRetention`, and expired ones received and ignored.
        public var tombstonesCollected = 0
        public var expiredTombstonesDropped = 0
        /// Sync requests refused because too many replies were already being streamed.
        public var syncRequestsRefused = 0
        /// Sync requests that repeated one whose reply was already on its way on the same
        /// connection (a requester that timed out behind a slow link): their replies left out
        /// what had been sent.
        public var syncRetriesResumed = 0
        /// Entries our sync replies left out because the requester held them already: its own
        /// writes, and ours or a third writer's that it reported holding (since 0.29.0; a third
        /// writer's since 0.30.0).
        public var syncEntriesLeftOut = 0
        /// Handshakes that failed on our listening sockets: the wrong mechanism, a garbage
        /// greeting, or a key refused (those are also in `untrustedHandshakesRefused`).
        public var handshakesFailed = 0
        /// CURVE handshakes refused because their key is not trusted, since start
        /// (`refusedHandshakes` lists the current ones, by address and key).
        public var untrustedHandshakesRefused = 0
        /// Connections to our sockets ended because the key they proved was revoked (removed
        /// from the trusted keys) after their handshake.
        public var revokedConnectionsEnded = 0
        /// Received entries dropped because the store could not commit them: by a failed commit,
        /// or unread during its back-off (fetched again later).
        public var inboundDroppedOnFailedCommit = 0
        /// Member records not taken: dated ahead of this node's clock by more than the drift
        /// limit, contradicting a member heard directly (held back until it falls silent), or
        /// beyond the member table's capacity (since 0.35.0).
        public var memberRecordsRefused = 0
        /// Times a member never heard directly waited for a place among those dialled (at most
        /// 32 at once; each gives its place up after 30 s unheard, and waits a back-off): a
        /// cluster starting many nodes at once shows a few, a flood of records for nodes that do
        /// not exist shows many (since 0.35.0).
        public var memberDialsDeferred = 0
        /// Local writes whose entry was larger than 64 KiB (the batch limit): not published on
        /// PUB, where each subscriber's queue would hold a copy; members fetch them by a repair
        /// after the heartbeat that follows (since 0.35.0).
        public var largeUpdatesWithheld = 0

        /// Every counter at 0.
        public init() {}
    }

    /// Connections refused by the ZAP handler (unknown CURVE key), per address and key; a key
    /// trusted since is no longer listed.
    public struct RefusedHandshake: Sendable, Codable, Equatable {
        public var address: String
        public var publicKey: String?
        public var count: Int
        public var last: Date
    }

    public var id: String
    public var incarnation: String
    /// The id naming this node's counter slots, lowercase as in slot keys: the incarnation, or a
    /// new id after a run of the data directory that did not stop cleanly. Absent from nodes
    /// before 0.25.0 (their slots are the incarnation's).
    public var counterSlot: String?
    public var epoch: UInt64
    public var listen: String
    /// The address members dial (`--advertise`, by default `listen`).
    public var advertise: String
    /// `active`; `leaving` while `leave` hands this node's writes over (writes are refused);
    /// `left` once it has left.
    public var membership: String
    public var hlc: String
    public var uptimeSeconds: Double
    public var entryCount: Int
    public var liveEntryCount: Int
    /// The root of the store digest, 16 hex digits (`digestText`). Equal digests mean equal
    /// replicated state.
    public var digest: String
    /// "curve" or "insecure".
    public var security: String
    /// Every member this node knows (forgotten ones excepted), by id.
    public var peers: [Peer]
    /// Seeds still being asked to let this node join.
    public var pendingSeeds: [String]
    public var refusedHandshakes: [RefusedHandshake]
    public var counters: Counters
    /// This node's clock against its members': the median of their offsets (theirs minus ours),
    /// and whether local writes are accepted ("alone", "unverified", "agrees", "skewed").
    public var clock: Clock
    /// Every current problem (load and save errors included), by kind then time.
    public var problems: [Problem]
    public var loadErrors: [Problem]
    public var saveErrors: [Problem]
    /// The space left where the data directory is (absent for a memory store, from nodes before
    /// 0.27.0, and when it cannot be read).
    public var disk: DiskSpace? = nil

    public struct Clock: Sendable, Codable, Equatable {
        public var verdict: String
        public var medianOffsetMillis: Int64?
        public var limitMillis: Int64
    }
}

/// What `replica-node health` reports: healthy only when the node serves, its last commits
/// (local and replicated) succeeded and its clock agrees with its members'.
public struct ReplicaHealth: Sendable, Codable, Equatable {
    public var healthy: Bool
    public var serving: Bool
    /// Every current problem; those with `failsHealth` make the node unhealthy.
    public var problems: [Problem]
}

extension ReplicaStatus.Counters {
    /// A counter a node does not send counts 0: an older node's `status` has no counter added
    /// since (`revokedConnectionsEnded`, ...), and a newer `replica-node status` still reads it
    /// during a rolling upgrade.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func count(_ key: CodingKeys) throws -> Int { try container.decodeIfPresent(Int.self, forKey: key) ?? 0 }
        self.init()
        malformedDropped = try count(.malformedDropped)
        oversizedDropped = try count(.oversizedDropped)
        forgedOriginsDropped = try count(.forgedOriginsDropped)
        futureTimestampsRejected = try count(.futureTimestampsRejected)
        skewedHeartbeats = try count(.skewedHeartbeats)
        updatesPublished = try count(.updatesPublished)
        updateMessagesPublished = try count(.updateMessagesPublished)
        updatesApplied = try count(.updatesApplied)
        updatesRelayed = try count(.updatesRelayed)
        syncEntriesReceived = try count(.syncEntriesReceived)
        syncBytesReceived = try count(.syncBytesReceived)
        syncRequestsServed = try count(.syncRequestsServed)
        repairedUpdates = try count(.repairedUpdates)
        repairsServed = try count(.repairsServed)
        repairsUnavailable = try count(.repairsUnavailable)
        tombstonesCollected = try count(.tombstonesCollected)
        expiredTombstonesDropped = try count(.expiredTombstonesDropped)
        syncRequestsRefused = try count(.syncRequestsRefused)
        syncRetriesResumed = try count(.syncRetriesResumed)
        syncEntriesLeftOut = try count(.syncEntriesLeftOut)
        handshakesFailed = try count(.handshakesFailed)
        untrustedHandshakesRefused = try count(.untrustedHandshakesRefused)
        revokedConnectionsEnded = try count(.revokedConnectionsEnded)
        inboundDroppedOnFailedCommit = try count(.inboundDroppedOnFailedCommit)
        memberRecordsRefused = try count(.memberRecordsRefused)
        memberDialsDeferred = try count(.memberDialsDeferred)
        largeUpdatesWithheld = try count(.largeUpdatesWithheld)
    }
}
