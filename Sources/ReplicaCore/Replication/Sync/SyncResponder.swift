/// The replies this node is streaming to other nodes' sync and repair requests.
///
/// A reply is a list of keys whose entries are read from the store a slice per loop turn (so a
/// large one never stalls local writes), and sent only as fast as its requester reads: the
/// ROUTER's per-connection send queue is small, and chunks that do not fit are held, encoded,
/// and offered again after `retryDelay`, before anything more is read. What a node holds for
/// requesters is so bounded: `maxReplies` replies, each a list of keys, what one turn read
/// (about `Replica.replyBytesPerTurn`) and what sits in one connection's queue. A reply nobody
/// reads for `timeout` is dropped.
///
/// (Held chunks replace putting the keys back: behind a slow link, every turn read and encoded
/// the same megabytes again, and the loop, never idle while a reply was in progress, ran a
/// core at 50-90% for as long as the slow requester's catch-up lasted.)
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
        /// Encoded chunks its requester's queue could not take yet, in order.
        var held: [HeldChunk] = []
        /// While its queue is full: when to offer the held chunks again.
        var retryAt: ContinuousClock.Instant?
    }

    /// One encoded chunk of a reply, and how many entries it carries.
    struct HeldChunk: Sendable {
        var frame: [UInt8]
        var entries: Int
    }

    /// How long a reply whose requester's queue is full waits before it is offered again:
    /// libzmq does not say when one connection's queue drains, so it is tried a few hundred
    /// times a second, instead of on every turn of a loop that would then never sleep.
    static let retryDelay: Duration = .milliseconds(2)

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

    /// Keys taken but not read this turn (the turn's bytes were reached) go back to the front.
    mutating func putBack(_ keys: [String], at index: Int) {
        replies[index].pending = ArraySlice(keys + replies[index].pending)
    }

    /// Chunks that could not be queued (the requester is not reading fast enough) wait, as
    /// encoded, until `now + retryDelay`.
    mutating func hold(_ chunks: [HeldChunk], at index: Int, now: ContinuousClock.Instant) {
        replies[index].held = chunks
        replies[index].retryAt = now + Self.retryDelay
    }

    /// The chunks held for reply `index`, taken out (they are offered again).
    mutating func takeHeld(at index: Int) -> [HeldChunk] {
        defer {
            replies[index].held = []
            replies[index].retryAt = nil
        }
        return replies[index].held
    }

    /// Numbers the next `count` chunks of reply `index`: returns the first one's index.
    mutating func numberChunks(_ count: Int, at index: Int) -> UInt32 {
        defer { replies[index].nextChunk += UInt32(count) }
        return replies[index].nextChunk
    }

    /// Chunks with `entries` entries of reply `index` were queued.
    mutating func sent(entries: Int, at index: Int, now: ContinuousClock.Instant) {
        replies[index].entriesSent += entries
        replies[index].lastProgress = now
    }

    /// Every key of reply `index` has been read: the chunks made now end it.
    func isListed(_ index: Int) -> Bool { replies[index].pending.isEmpty && replies[index].buckets.isEmpty }

    /// Reply `index` is sent: every key read, every chunk queued.
    func isDone(_ index: Int) -> Bool { isListed(index) && replies[index].held.isEmpty }

    /// Reply `index` waits for its requester's queue (its held chunks are offered at `retryAt`).
    func isWaiting(_ index: Int, now: ContinuousClock.Instant) -> Bool { replies[index].retryAt.map { now < $0 } ?? false }

    /// Whether a reply can go on now (so the loop should not sleep).
    func hasReplyReady(now: ContinuousClock.Instant) -> Bool { replies.contains { $0.retryAt.map { now >= $0 } ?? true } }

    /// The earliest moment a waiting reply is offered again.
    var nextRetry: ContinuousClock.Instant? { replies.compactMap(\.retryAt).min() }

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
