import Foundation

/// Everything a `Replica` needs to start.
public struct ReplicaConfiguration: Sendable {
    public enum Storage: Sendable {
        /// A SQLite file in this directory (durable).
        case directory(URL)
        /// Nothing durable: for tests, previews and benchmarks.
        case memory
    }

    /// How cluster sockets are protected.
    public enum Security: Sendable {
        /// No encryption or authentication: anyone who reaches the ports can read and serve data.
        case insecure
        /// CURVE encryption and authentication on every cluster socket (see docs/security.md).
        case curve(CurveSecurity)
    }

    public var node: NodeID
    public var listen: Endpoint
    /// Seeds: members to contact at start-up (and whenever this node hears no member). One
    /// reachable member is enough; the others are learnt from it by gossip. Listing this node
    /// itself is harmless, so every node of a cluster can share one list.
    public var peers: [Endpoint]
    /// The address other members dial to reach this node (NAT, containers, proxies); nil: `listen`.
    public var advertise: Endpoint?
    /// Find members on the local network segment by UDP broadcast beacons on this port
    /// (`serve --discover`); nil: no beacons.
    public var discoveryPort: UInt16?
    /// How often a discovery beacon is sent.
    public var beaconInterval: Duration = .seconds(1)
    public var storage: Storage
    /// SQLite `PRAGMA synchronous`: NORMAL survives a process crash, FULL also a power cut.
    public var synchronous: String = "NORMAL"
    /// `.insecure` by default in the library; `replica-node serve` demands an explicit choice.
    public var security: Security = .insecure
    public var limits: WireLimits = .standard
    /// How far ahead of our clock a remote timestamp may be before it is rejected, and how far
    /// this node's clock may be from its members' (median) before it refuses local writes.
    public var maxClockDrift: Duration = .seconds(60)
    /// The wall clock (ms since 1970) the node stamps and compares with: the system clock. A
    /// simulation or a test of clock skew may shift it.
    public var wallClock: HybridLogicalClock.PhysicalClock = HybridLogicalClock.systemClock
    /// Where the replica runs (nil: libzmq sockets on a thread of its own, the system's clock).
    @_spi(Simulation) public var runtime: ReplicaRuntime?
    /// How long local writes wait, after members are first heard, for the first comparison of
    /// this node's clock with theirs (see `ClockCheck`); then they go ahead unchecked.
    public var clockCheckGrace: Duration = .seconds(3)
    /// Refuse local writes (`ReplicaError.clockUnchecked`) until this node's clock has agreed
    /// with a member's at least once since it started, instead of accepting them after
    /// `clockCheckGrace`. Off by default, so that a node started where no member can be reached
    /// (offline, in a partition) keeps working; then a wrong clock stamps its writes wrong (far
    /// ahead, they win over later writes once members accept them; far behind, they lose to
    /// earlier ones). A node with no seeds and no members (a cluster of one) is never held.
    public var requireClockCheck = false
    /// Twice a second: a member is suspect after three missed heartbeats rather than one and a
    /// half, and a healed link is noticed (gaps, digests, clock) within half a second.
    public var heartbeatInterval: Duration = .milliseconds(500)
    /// Silence after which a peer is suspect, then down.
    public var suspectAfter: Duration = .milliseconds(1500)
    public var downAfter: Duration = .seconds(5)
    /// How long `leave()` waits for the members alive to report holding this node's writes
    /// (they repair what they lack meanwhile); the acknowledgements of the departure are then
    /// awaited for at most 2 s more.
    public var leaveTimeout: Duration = .seconds(10)
    /// A full digest comparison with every peer at this interval, whatever else happened.
    public var periodicSyncInterval: Duration = .seconds(30)
    /// A sync that has received nothing for this long is abandoned (and retried by a trigger);
    /// after each such timeout in a row with a member, its next sync waits twice as long, up to 4
    /// times this (`SyncPlanner`). Three in a row list a `sync` problem.
    public var syncTimeout: Duration = .seconds(10)
    /// How long a tombstone (a removed key, e.g. a removed log element) is kept before it is
    /// deleted, and the record of a member that left or was forgotten after its departure. A
    /// node offline for longer than this may bring removed values (or departed members, as
    /// `down`) back when it returns: see docs/sharing.md, "Tombstone retention".
    public var tombstoneRetention: Duration = .seconds(7 * 24 * 3600)

    /// `tombstoneRetention` in milliseconds, 0 if negative, clamped to a `UInt64`.
    var tombstoneRetentionMillis: UInt64 { Self.millis(tombstoneRetention) }
    /// `maxClockDrift` in milliseconds, likewise.
    var maxClockDriftMillis: UInt64 { Self.millis(maxClockDrift) }

    static func millis(_ duration: Duration) -> UInt64 {
        let components = duration.components
        guard components.seconds >= 0 else { return 0 }
        let (millis, overflow) = UInt64(components.seconds).multipliedReportingOverflow(by: 1000)
        return overflow ? .max : millis.addingSaturated(UInt64(components.attoseconds / 1_000_000_000_000_000))
    }
    /// How often expired tombstones are looked for.
    public var tombstoneSweepInterval: Duration = .seconds(60)
    /// How many undelivered changes a `changes(prefix:)` stream keeps when its reader falls
    /// behind; beyond that the oldest are dropped, and its `ChangeLoss` says so.
    public var undeliveredChanges: Int = 65_536
    /// How many of its latest published updates a node can resend to a peer that lost some (it
    /// keeps their keys; see `RetransmitBuffer`).
    public var retransmitWindow: Int = 262_144
    /// Updates read from the network before they are committed (group commit size).
    public var maxBatch: Int = 8192
    /// Publish the local writes of one commit as batches of updates (one message for up to
    /// `WireLimits.maxBatchBytes`). Off: one message per update, as nodes from before batches
    /// expect (for a rolling upgrade; see docs/protocol.md, "Mixed versions").
    public var batchesUpdates = true

    public init(node: NodeID, listen: Endpoint, peers: [Endpoint] = [], storage: Storage) {
        self.node = node
        self.listen = listen
        self.peers = peers
        self.storage = storage
    }
}

/// CURVE settings: this node's key pair, who may connect, and who each seed must be.
public struct CurveSecurity: Sendable {
    public var keys: CurveKeyPair
    /// Public keys (Z85) of the nodes allowed to connect to this node's sockets, and to be
    /// admitted as members.
    public var trusted: Set<String>
    /// The public key each seed must prove when this node connects to it.
    public var peerKeys: [Endpoint: String]
    /// Which node id a trusted key belongs to, where the trust source says (a trust directory
    /// names keys `ID.pub`): a member record is admitted only with its own id's key.
    public var keyOwners: [String: NodeID]

    public init(keys: CurveKeyPair, trusted: Set<String>, peerKeys: [Endpoint: String], keyOwners: [String: NodeID] = [:]) {
        self.keys = keys
        self.trusted = trusted
        self.peerKeys = peerKeys
        self.keyOwners = keyOwners
    }
}

extension ReplicaConfiguration {
    /// The base timing of every member's session, from the heartbeat, suspicion and sync settings.
    var peerTiming: PeerTiming {
        PeerTiming(heartbeatInterval: heartbeatInterval, suspectAfter: suspectAfter, downAfter: downAfter, requestTimeout: syncTimeout)
    }
}
