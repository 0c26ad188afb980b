import Foundation

/// Liveness of a peer, from the time since it was last heard (any message counts).
public enum PeerState: String, Sendable, Codable {
    /// Never heard from since this node started.
    case unknown
    case alive
    /// Silent longer than `suspectAfter`.
    case suspect
    /// Silent longer than `downAfter`.
    case down
}

/// What one node knows about one configured peer, and the two sockets that reach it.
/// Owned by the replica actor.
struct PeerLink {
    let endpoint: Endpoint
    /// The exact strings connected (with the source address), needed to re-dial.
    let publishAddress: String
    let syncAddress: String
    let subscriber: ZMQSocket
    let dealer: ZMQSocket
    /// Socket-monitor events of `dealer` (handshake succeeded, disconnected).
    let dealerEvents: ZMQSocket
    let subscriberEvents: ZMQSocket
    /// When the SUB and the DEALER were last (re)dialled, and whether their handshake with the
    /// peer completed since (see `Replica.redialSilentPeers`).
    var subscriberDialed: ContinuousClock.Instant
    var dealerDialed: ContinuousClock.Instant
    var subscriberConnected = false
    var dealerConnected = false
    /// Completed ZMTP handshakes of `dealer` with the peer's ROUTER (1 after the first connect).
    var dealerHandshakes = 0
    /// The DEALER lost its connection since the current sync was requested.
    var dealerDisconnected = false
    /// A sync was started by a DEALER reconnect since this peer was last seen down or unknown,
    /// so its "alive again" heartbeat need not start another one.
    var reconnectSyncSinceDown = false

    var node: NodeID?
    var incarnation: UUID?
    var state: PeerState = .unknown
    var lastHeard: ContinuousClock.Instant?
    /// The last update sequence received from this peer (nil: none yet since it (re)started).
    var lastSequence: UInt64?
    var lastDigestRoot: UInt64?
    /// Consecutive heartbeats whose root differed from ours.
    /// Our digest root when this peer's previous heartbeat arrived (see `receive(_: Heartbeat)`).
    var ourRootAtLastHeartbeat: UInt64?
    var sequenceGaps = 0
    /// This peer's update sequences known to be lost, oldest first: repaired one request at a
    /// time from the peer's retransmit buffer (a full sync if they are no longer there).
    var missing: [ClosedRange<UInt64>] = []
    var repair: RepairInFlight?
    var repairsCompleted = 0
    /// When this node first learned it lacks some of the peer's updates (nil: caught up);
    /// status reports the time since as replication lag.
    var behindSince: ContinuousClock.Instant?
    /// The peer's wall clock minus ours in milliseconds, from its last heartbeat.
    var clockOffsetMillis: Int64?

    struct RepairInFlight {
        var requestID: UInt64
        var range: ClosedRange<UInt64>
        var lastProgress: ContinuousClock.Instant
    }
    var syncsCompleted = 0
    var sync: SyncInFlight?
    var syncWanted = false
    var syncReason = "start-up"

    struct SyncInFlight {
        var requestID: UInt64
        var reason: String
        var started: ContinuousClock.Instant
        var lastProgress: ContinuousClock.Instant
        var chunks = 0
        var entries = 0
        var bytes = 0
    }
}
