import Foundation

/// Every message nodes exchange. Byte layouts are in docs/protocol.md.
public enum WireMessage: Equatable, Sendable {
    /// A local write, published on PUB by the node that made it.
    case update(Update)
    /// A node's liveness and state summary, published on PUB about once a second.
    case heartbeat(Heartbeat)
    /// A DEALER asks a peer's ROUTER for the entries of the buckets where digests differ.
    case syncRequest(SyncRequest)
    /// One bounded piece of a sync or repair reply, ROUTER to DEALER.
    case syncChunk(SyncChunk)
    /// A DEALER asks a peer's ROUTER to resend the updates it published with these sequences.
    case repairRequest(RepairRequest)

    public enum Kind: UInt8, Sendable {
        case update = 1, heartbeat = 2, syncRequest = 3, syncChunk = 4, repairRequest = 5
    }

    public var kind: Kind {
        switch self {
        case .update: .update
        case .heartbeat: .heartbeat
        case .syncRequest: .syncRequest
        case .syncChunk: .syncChunk
        case .repairRequest: .repairRequest
        }
    }

    public var origin: NodeID {
        switch self {
        case .update(let m): m.origin
        case .heartbeat(let m): m.origin
        case .syncRequest(let m): m.origin
        case .syncChunk(let m): m.origin
        case .repairRequest(let m): m.origin
        }
    }
}

public struct Update: Equatable, Sendable {
    public var origin: NodeID
    /// Per-origin, gap-free counter of published messages (updates and heartbeats share it
    /// being read, but only updates advance it), so a receiver can see what it missed.
    public var sequence: UInt64
    public var entry: Entry

    public init(origin: NodeID, sequence: UInt64, entry: Entry) {
        self.origin = origin
        self.sequence = sequence
        self.entry = entry
    }
}

public struct Heartbeat: Equatable, Sendable {
    public var origin: NodeID
    public var incarnation: UUID
    /// The sequence number of the last update this node published.
    public var sequence: UInt64
    public var timestamp: HybridTimestamp
    public var digestRoot: UInt64
    public var entryCount: UInt64

    public init(origin: NodeID, incarnation: UUID, sequence: UInt64, timestamp: HybridTimestamp, digestRoot: UInt64, entryCount: UInt64) {
        self.origin = origin
        self.incarnation = incarnation
        self.sequence = sequence
        self.timestamp = timestamp
        self.digestRoot = digestRoot
        self.entryCount = entryCount
    }
}

public struct SyncRequest: Equatable, Sendable {
    public var origin: NodeID
    public var requestID: UInt64
    /// The requester's bucket hashes (`StoreDigest.bucketCount` of them).
    public var buckets: [UInt64]

    public init(origin: NodeID, requestID: UInt64, buckets: [UInt64]) {
        self.origin = origin
        self.requestID = requestID
        self.buckets = buckets
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
    public var entries: [Entry]

    public init(origin: NodeID, requestID: UInt64, index: UInt32, isLast: Bool, isUnavailable: Bool = false, entries: [Entry]) {
        self.origin = origin
        self.requestID = requestID
        self.index = index
        self.isLast = isLast
        self.isUnavailable = isUnavailable
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
