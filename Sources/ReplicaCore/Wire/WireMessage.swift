import Foundation

/// Every message nodes exchange. Byte layouts are in docs/protocol.md.
public enum WireMessage: Equatable, Sendable {
    /// A local write, published on PUB by the node that made it.
    case update(Update)
    /// The local writes of one commit, published together (consecutive sequences).
    case updates(UpdateBatch)
    /// A node's liveness, state summary and view of its peers, published on PUB twice a second by default.
    case heartbeat(Heartbeat)
    /// A DEALER asks a peer's ROUTER for the entries of the buckets where digests differ.
    case syncRequest(SyncRequest)
    /// One bounded piece of a sync or repair reply, ROUTER to DEALER.
    case syncChunk(SyncChunk)
    /// A DEALER asks a peer's ROUTER to resend the updates it published with these sequences.
    case repairRequest(RepairRequest)
    /// Member records: a join or membership exchange (DEALER -> ROUTER and back), or changes
    /// announced to every subscriber on PUB.
    case members(MembersMessage)
    /// Another node's update passed on by a member that hears it, for members that do not
    /// (a partial partition). Published on PUB only to subscribers that asked for that origin.
    case relay(RelayedUpdate)

    public enum Kind: UInt8, Sendable {
        case update = 1, heartbeat = 2, syncRequest = 3, syncChunk = 4, repairRequest = 5, members = 6, relay = 7, updates = 8

        /// As docs/protocol.md names it, for messages about a dropped message.
        public var name: String {
            switch self {
            case .update: "update"
            case .heartbeat: "heartbeat"
            case .syncRequest: "sync request"
            case .syncChunk: "sync chunk"
            case .repairRequest: "repair request"
            case .members: "members"
            case .relay: "relay"
            case .updates: "updates"
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .update: .update
        case .updates: .updates
        case .heartbeat: .heartbeat
        case .syncRequest: .syncRequest
        case .syncChunk: .syncChunk
        case .repairRequest: .repairRequest
        case .members: .members
        case .relay: .relay
        }
    }

    public var origin: NodeID {
        switch self {
        case .update(let m): m.origin
        case .updates(let m): m.origin
        case .heartbeat(let m): m.origin
        case .syncRequest(let m): m.origin
        case .syncChunk(let m): m.origin
        case .repairRequest(let m): m.origin
        case .members(let m): m.origin
        case .relay(let m): m.origin
        }
    }
}

public struct Update: Equatable, Sendable {
    public var origin: NodeID
    /// Per-origin, gap-free counter of published updates (+1 per update, from 1 at each start of
    /// the origin's process), so a receiver can see what it missed.
    public var sequence: UInt64
    public var entry: Entry

    public init(origin: NodeID, sequence: UInt64, entry: Entry) {
        self.origin = origin
        self.sequence = sequence
        self.entry = entry
    }
}

/// Several updates of one origin in one message: the local writes one commit produced, with the
/// consecutive sequences `firstSequence`, `firstSequence + 1`, ... in order. Each keeps its own
/// sequence, so gap detection and repair work exactly as for single updates; one message (one
/// send, one receive, one CURVE box) carries them all.
public struct UpdateBatch: Equatable, Sendable {
    public var origin: NodeID
    public var firstSequence: UInt64
    /// At least one; every one written by `origin`.
    public var entries: [Entry]

    public init(origin: NodeID, firstSequence: UInt64, entries: [Entry]) {
        self.origin = origin
        self.firstSequence = firstSequence
        self.entries = entries
    }

    /// The sequences of `entries`, in order.
    public var sequences: ClosedRange<UInt64> { firstSequence...firstSequence + UInt64(max(entries.count, 1) - 1) }
}

/// What a heartbeat says about one of the sender's peers: how far the sender has received that
/// peer's update stream, whether it hears the peer itself, and the echo of the peer's last
/// heartbeat (so the peer can measure its round trip and clock offset to the sender, as NTP does).
public struct PeerReport: Equatable, Sendable {
    public var node: NodeID
    /// The epoch of the peer's update stream these figures are about (0: none received).
    public var epoch: UInt64
    /// Every update of that stream up to this sequence is held by the sender (not a range it is
    /// still repairing, nor losses waiting for a sync: see `PeerSession.heldThrough`).
    public var through: UInt64
    /// The peer's `wallMillis` from the last heartbeat received from it (0: none).
    public var echoWallMillis: UInt64
    /// Milliseconds between receiving that heartbeat and sending this one.
    public var heldMillis: UInt32
    /// The sender heard the peer directly (on the peer's own connection) within its suspect time.
    public var hearsDirectly: Bool

    public init(node: NodeID, epoch: UInt64, through: UInt64, echoWallMillis: UInt64, heldMillis: UInt32, hearsDirectly: Bool) {
        self.node = node
        self.epoch = epoch
        self.through = through
        self.echoWallMillis = echoWallMillis
        self.heldMillis = heldMillis
        self.hearsDirectly = hearsDirectly
    }
}

public struct Heartbeat: Equatable, Sendable {
    public var origin: NodeID
    /// The sender's store incarnation (new when its data directory is new).
    public var incarnation: UUID
    /// The sender's process epoch: its update sequences count from 1 within one epoch.
    public var epoch: UInt64
    /// The sequence number of the last update this node published in this epoch.
    public var sequence: UInt64
    public var timestamp: HybridTimestamp
    /// The sender's wall clock (ms since 1970) when it sent this: peers estimate their offset.
    public var wallMillis: UInt64
    public var digestRoot: UInt64
    public var entryCount: UInt64
    /// A hash of the sender's member table: equal hashes mean equal tables.
    public var membersDigest: UInt64
    /// The sender's store serial now (see `SyncRequest.since`).
    public var storeSerial: UInt64
    public var reports: [PeerReport]

    public init(
        origin: NodeID, incarnation: UUID, epoch: UInt64 = 0, sequence: UInt64, timestamp: HybridTimestamp,
        wallMillis: UInt64 = 0, digestRoot: UInt64, entryCount: UInt64, membersDigest: UInt64 = 0, storeSerial: UInt64 = 0,
        reports: [PeerReport] = []
    ) {
        self.origin = origin
        self.incarnation = incarnation
        self.epoch = epoch
        self.sequence = sequence
        self.timestamp = timestamp
        self.wallMillis = wallMillis
        self.digestRoot = digestRoot
        self.entryCount = entryCount
        self.membersDigest = membersDigest
        self.storeSerial = storeSerial
        self.reports = reports
    }
}

/// A point in a responder's history: everything it stored after `serial` in process `epoch`.
public struct StoreMark: Equatable, Sendable, Hashable {
    public var epoch: UInt64
    public var serial: UInt64

    public init(epoch: UInt64, serial: UInt64) {
        self.epoch = epoch
        self.serial = serial
    }

    /// "Everything": a responder in any other epoch ignores a mark anyway.
    public static let none = StoreMark(epoch: 0, serial: 0)
}

public struct SyncRequest: Equatable, Sendable {
    public var origin: NodeID
    public var requestID: UInt64
    /// The requester's bucket hashes (`StoreDigest.bucketCount` of them).
    public var buckets: [UInt64]
    /// Only entries the responder stored after this mark are wanted: the requester already holds
    /// everything the responder held at the mark (from an earlier completed sync with it).
    /// Ignored (everything in the differing buckets is sent) when its epoch is not the
    /// responder's current one.
    public var since: StoreMark

    public init(origin: NodeID, requestID: UInt64, buckets: [UInt64], since: StoreMark = .none) {
        self.origin = origin
        self.requestID = requestID
        self.buckets = buckets
        self.since = since
    }
}

public struct SyncChunk: Equatable, Sendable {
    public var origin: NodeID
    public var requestID: UInt64
    public var index: UInt32
    public var isLast: Bool
    /// A repair the responder cannot serve (the updates left its retransmit buffer): the
    /// requester falls back to a full sync.
    public var isUnavailable: Bool
    /// The responder's store mark when it took the request: once every chunk has arrived, the
    /// requester holds everything the responder held then (the next request's `since`).
    public var mark: StoreMark
    /// The sequence of the last update the responder had published (in the mark's epoch) when
    /// it took the request: the requester then holds the responder's own stream that far.
    public var sequence: UInt64
    public var entries: [Entry]

    public init(
        origin: NodeID, requestID: UInt64, index: UInt32, isLast: Bool, isUnavailable: Bool = false,
        mark: StoreMark = .none, sequence: UInt64 = 0, entries: [Entry]
    ) {
        self.origin = origin
        self.requestID = requestID
        self.index = index
        self.isLast = isLast
        self.isUnavailable = isUnavailable
        self.mark = mark
        self.sequence = sequence
        self.entries = entries
    }
}

public struct RepairRequest: Equatable, Sendable {
    public var origin: NodeID
    public var requestID: UInt64
    /// The first and last missing update sequence numbers of the responder.
    public var first: UInt64
    public var last: UInt64

    public init(origin: NodeID, requestID: UInt64, first: UInt64, last: UInt64) {
        self.origin = origin
        self.requestID = requestID
        self.first = first
        self.last = last
    }
}

public struct MembersMessage: Equatable, Sendable {
    public var origin: NodeID
    /// The receiver should answer with its own table (a join, or a membership exchange after
    /// heartbeats showed different tables). Always false on PUB.
    public var wantsReply: Bool
    public var records: [MemberRecord]

    public init(origin: NodeID, wantsReply: Bool, records: [MemberRecord]) {
        self.origin = origin
        self.wantsReply = wantsReply
        self.records = records
    }

    /// `records` as one message or, when they exceed `limits` (more than `maxMembers` records,
    /// or more bytes than a sync chunk may hold), several, in order. Only the last one asks for
    /// a reply, so the receiver answers once, having merged them all. A table that only grows
    /// (members that left stay listed) must still reach a joining node: one message of it all
    /// was refused by every receiver once the table passed the limit.
    public static func split(origin: NodeID, wantsReply: Bool, records: [MemberRecord], limits: WireLimits) -> [MembersMessage] {
        let maxBytes = limits.maxChunkBytes - 64
        var messages: [MembersMessage] = []
        var current: [MemberRecord] = []
        var bytes = 0
        for record in records {
            let size = Self.encodedSize(of: record)
            if !current.isEmpty && (current.count == limits.maxMembers || bytes + size > maxBytes) {
                messages.append(MembersMessage(origin: origin, wantsReply: false, records: current))
                current = []
                bytes = 0
            }
            current.append(record)
            bytes += size
        }
        messages.append(MembersMessage(origin: origin, wantsReply: wantsReply, records: current))
        return messages
    }

    /// A record's size on the wire (docs/protocol.md, "Member record").
    static func encodedSize(of record: MemberRecord) -> Int {
        1 + record.node.rawValue.utf8.count + 8 + 16 + 1 + 1 + record.address.host.utf8.count + 2 + 1 + (record.publicKey?.count ?? 0)
    }
}

public struct RelayedUpdate: Equatable, Sendable {
    /// The member passing the update on.
    public var origin: NodeID
    /// The node that wrote and first published it, and its epoch and sequence there.
    public var source: NodeID
    public var sourceEpoch: UInt64
    public var sequence: UInt64
    public var entry: Entry

    public init(origin: NodeID, source: NodeID, sourceEpoch: UInt64, sequence: UInt64, entry: Entry) {
        self.origin = origin
        self.source = source
        self.sourceEpoch = sourceEpoch
        self.sequence = sequence
        self.entry = entry
    }
}
