/// The replies this node is streaming to other nodes' sync and repair requests.
///
/// A reply is a list of keys whose entries are read from the store a slice per loop turn (so a
/// large one never stalls local writes), and sent only as fast as its requester reads: the
/// ROUTER's per-connection send queue is small, and a slice that does not fit is put back and
/// tried again next turn. What a node holds for requesters is so bounded: `maxReplies` replies,
/// each a list of keys plus what sits in one connection's queue. A reply nobody reads for
/// `timeout` is dropped.
struct SyncResponder: Sendable {
    struct Reply: Sendable {
        /// The ROUTER routing id of the requesting connection.
        var client: [UInt8]
        var requester: NodeID
        var requestID: UInt64
        var mark: StoreMark
        /// Our published sequence when the request was taken (see `SyncChunk.sequence`).
        var sequence: UInt64 = 0
        /// A repair (keys from the retransmit buffer) rather than a sync.
        var isRepair: Bool
        /// The keys whose entries are still to be sent.
        var pending: ArraySlice<String>
        /// Digest buckets whose keys are still to be listed (a sync lists them a few at a time,
        /// so a request costs nothing until its reply is read), and the serial its keys must be
        /// stored after.
        var buckets: ArraySlice<Int> = []
        var storedAfter: UInt64 = 0
        var nextChunk: UInt32 = 0
        var entriesSent = 0
        var lastProgress: ContinuousClock.Instant
    }

    let maxReplies: Int
    private(set) var replies: [Reply] = []

    init(maxReplies: Int) { self.maxReplies = maxReplies }

    enum Admission: Equatable, Sendable {
        case accepted
        /// The same connection's earlier reply was dropped for this one (it asked again).
        case replacedEarlier
        /// Too many replies in progress: the requester times out and asks again later.
        case refused
    }

    mutating func accept(_ reply: Reply) -> Admission {
        let before = replies.count
        // One reply per connection: a repeated request means the requester gave up the earlier
        // one. A repair does not replace a sync in progress (a node asks for both).
        replies.removeAll { $0.client == reply.client && $0.isRepair == reply.isRepair }
        let replaced = replies.count < before
        guard replies.count < maxReplies else { return .refused }
        replies.append(reply)
        return replaced ? .replacedEarlier : .accepted
    }

    /// The next slice of reply `index`: at most `limit` keys.
    mutating func take(from index: Int, limit: Int) -> ArraySlice<String> {
        let slice = replies[index].pending.prefix(limit)
        replies[index].pending = replies[index].pending.dropFirst(limit)
        return slice
    }

    /// Keys that could not be queued (the requester is not reading) go back to the front.
    mutating func putBack(_ keys: [String], at index: Int) {
        replies[index].pending = ArraySlice(keys + replies[index].pending)
    }

    /// `chunks` chunks with `entries` entries of reply `index` were queued.
    mutating func sent(chunks: Int, entries: Int, at index: Int, now: ContinuousClock.Instant) {
        replies[index].nextChunk += UInt32(chunks)
        replies[index].entriesSent += entries
        replies[index].lastProgress = now
    }

    func isDone(_ index: Int) -> Bool { replies[index].pending.isEmpty && replies[index].buckets.isEmpty }

    /// The next bucket whose keys reply `index` must list, taken out (nil: none left).
    mutating func nextBucket(of index: Int) -> Int? { replies[index].buckets.popFirst() }

    /// Keys listed from a bucket join the reply's queue.
    mutating func append(_ keys: [String], to index: Int) { replies[index].pending.append(contentsOf: keys) }

    /// Removes the replies at `indices` (finished or failed) and returns them.
    @discardableResult
    mutating func remove(at indices: [Int]) -> [Reply] {
        let removed = indices.map { replies[$0] }
        for index in indices.sorted(by: >) { replies.remove(at: index) }
        return removed
    }

    /// Drops replies that made no progress for `timeout` (their requester is gone or stuck).
    mutating func expire(now: ContinuousClock.Instant, timeout: Duration) -> [Reply] {
        let stale = replies.indices.filter { now - replies[$0].lastProgress >= timeout }
        return remove(at: stale)
    }
}
