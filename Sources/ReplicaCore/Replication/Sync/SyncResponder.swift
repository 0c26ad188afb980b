/// The replies this node is streaming to other nodes' sync and repair requests.
///
/// A reply is a list of keys whose entries are read from the store a slice per loop turn (so a
/// large one never stalls local writes), and sent only as fast as its requester reads: the
/// ROUTER's per-connection send queue is small, and chunks that do not fit are held, encoded,
/// and offered again after `retryDelay`, before anything more is read. What a node holds for
/// requesters is so bounded: `maxReplies` replies, each a list of keys, what one turn read
/// (about `Replica.replyBytesPerTurn`) and what sits in one connection's queue. A reply that
/// could queue nothing for `stalledAfter` gives its place to a new request when every place is
/// taken; it is not dropped on a timer. (libzmq takes more of a connection's queue only once
/// half of it drained: behind a slow link, four chunks of 900 KB at 60 kB/s are a minute
/// without a chunk queued. Dropped after 40 s, such a reply stopped the requester's catch-up
/// until its own patience ran out and it asked again: 40 s lost each time, and what had been
/// read sent twice. A connection that is closed ends its reply at the next offer, by
/// ROUTER_MANDATORY; one whose requester is stopped, or cut off with data unacknowledged,
/// stays open, for the kernel's retransmission limit (about 15 minutes) in the second case, and
/// its reply keeps its place unless a new request needs it.)
///
/// (Held chunks replace putting the keys back: behind a slow link, every turn read and encoded
/// the same megabytes again, and the loop, never idle while a reply was in progress, ran a
/// core at 50-90% for as long as the slow requester's catch-up lasted.)
///
/// A requester whose patience ran out before a chunk could cross may send the same request
/// again (the same id and `since`): a retry. A reply still in progress goes on where it was
/// (the requester's patience ran out, not the reply). One that ended is answered by a new
/// reply leaving out what earlier attempts already queued on the same connection, which will
/// arrive before it or not at all (a connection lost ends the requester's sync): per bucket,
/// only entries stored after that attempt's mark are sent again (`Reply.queuedBefore`,
/// `deliveries`). A connection is its ROUTER routing id: Replica's DEALERs set none, so the
/// ROUTER names each connection anew, and a reconnection is another client. Before, each
/// retry's full reply crossed the slow link behind the last one's: 2-3 times the data, the link
/// busy minutes after the catch-up.
struct SyncResponder: Sendable {
    struct Reply: Sendable {
        /// The ROUTER routing id of the requesting connection.
        var client: [UInt8]
        /// The request's `since`, as sent: a retry repeats it.
        var since: StoreMark = .none
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
        var storedAfter: UInt64?
        /// Writes the requester is known to hold already: listed keys leave them out
        /// (`HeldByRequester`).
        var knownHeld: HeldWrites = .nothing
        /// Per bucket, the serial through which earlier attempts of this request queued its
        /// entries on this connection: only entries stored after it are listed again.
        var queuedBefore: [Int: UInt64] = [:]
        /// Per bucket listed so far, its listed keys not yet read into chunks libzmq took: a
        /// listed bucket with none left is wholly on its way. (Counted by bucket, not by
        /// position: the store reads a turn's keys in its own order, and stops where the turn's
        /// bytes run out, anywhere among them.)
        var unsent: [Int: Int] = [:]
        var nextChunk: UInt32 = 0
        var entriesSent = 0
        var lastProgress: MonotonicInstant
        /// Encoded chunks its requester's queue could not take yet, in order.
        var held: [HeldChunk] = []
        /// While its queue is full: when to offer the held chunks again.
        var retryAt: MonotonicInstant?

        /// How long after `now` its held chunks are offered again: soon while its connection
        /// drains, rarely once it has not for `drainingWindow` (a slow link, or a requester
        /// stopped): a reply may wait for minutes, and the loop need not wake for it hundreds
        /// of times a second.
        func offerDelay(now: MonotonicInstant) -> Duration {
            isStalled(now: now, after: SyncResponder.drainingWindow) ? SyncResponder.stalledRetryDelay : SyncResponder.retryDelay
        }

        /// Nothing of it could be queued for `after`.
        func isStalled(now: MonotonicInstant, after: Duration) -> Bool { now - lastProgress >= after }
    }

    /// One encoded chunk of a reply, how many entries it carries, and the listed keys, per
    /// bucket, that are sent once it is queued (the last chunk of a turn carries all the keys
    /// the turn read).
    struct HeldChunk: Sendable {
        var frame: [UInt8]
        var entries: Int
        var keys: [Int: Int] = [:]
    }

    /// What replies to one request queued on one connection, kept after the reply ends so that
    /// a retry of the request can leave it out.
    struct Delivery: Sendable, Equatable {
        var client: [UInt8]
        var requestID: UInt64
        var since: StoreMark
        /// Per bucket, the serial through which its entries were queued.
        var buckets: [Int: UInt64]
    }

    /// Deliveries kept (the most recent, one per connection): retries come within a minute or
    /// two of their request, from the few members that sync with this node.
    static let maxDeliveries = 32
    private(set) var deliveries: [Delivery] = []

    /// How long a reply whose requester's queue is full waits before it is offered again:
    /// libzmq does not say when one connection's queue drains, so it is tried a few hundred
    /// times a second, instead of on every turn of a loop that would then never sleep.
    static let retryDelay: Duration = .milliseconds(2)
    /// The same, for a reply that could queue nothing for `drainingWindow`: behind a slow link
    /// or a stopped requester, it may wait minutes.
    static let stalledRetryDelay: Duration = .milliseconds(100)
    /// A connection draining at all frees its queue within this long (a fast one, within
    /// milliseconds); past it, a reply's held chunks are offered at `stalledRetryDelay`.
    static let drainingWindow: Duration = .seconds(1)

    let maxReplies: Int
    private(set) var replies: [Reply] = []

    init(maxReplies: Int) { self.maxReplies = maxReplies }

    enum Admission: Equatable, Sendable {
        case accepted
        /// The same connection's earlier reply was dropped for this one (it asked for something
        /// else: another request id or `since`).
        case replacedEarlier
        /// Every place was taken: the reply of `requester`, which could queue nothing for
        /// `stalledAfter`, was dropped for this one.
        case tookPlaceOfStalled(requester: NodeID)
        /// Too many replies in progress, none stalled: the requester times out and asks again
        /// later.
        case refused
    }

    /// A retry of a sync request (the same id and `since`) whose reply is still in progress on
    /// the same connection: that reply goes on where it was, and the request needs no reply of
    /// its own (returns true). The requester's patience ran out, not the reply: replaced, it
    /// would read again what it had read and not yet queued. A retry is not progress: a reply
    /// its requester asks again for, but does not read, still stalls.
    func continues(client: [UInt8], requestID: UInt64, since: StoreMark) -> Bool {
        replies.contains { $0.client == client && !$0.isRepair && $0.requestID == requestID && $0.since == since }
    }

    /// Takes a request's reply, if there is room: one reply per connection (and one repair),
    /// at most `maxReplies` in all, a stalled one (nothing queued for `stalledAfter`) giving
    /// its place to a new one.
    mutating func accept(_ reply: Reply, now: MonotonicInstant, stalledAfter: Duration) -> Admission {
        var reply = reply
        // One reply per connection: a new request means the requester gave up the earlier one
        // (a retry of it continues it instead: `continues`). A repair does not replace a sync
        // in progress (a node asks for both).
        let earlier = replies.indices.filter { replies[$0].client == reply.client && replies[$0].isRepair == reply.isRepair }
        remove(at: earlier)
        if !reply.isRepair { reply.queuedBefore = queuedBefore(retrying: reply) }
        var admission: Admission = earlier.isEmpty ? .accepted : .replacedEarlier
        if replies.count >= maxReplies {
            let stalled = replies.indices.filter { replies[$0].isStalled(now: now, after: stalledAfter) }
            guard let stalest = stalled.min(by: { replies[$0].lastProgress < replies[$1].lastProgress }) else { return .refused }
            admission = .tookPlaceOfStalled(requester: replies[stalest].requester)
            remove(at: [stalest])
        }
        replies.append(reply)
        return admission
    }

    /// What earlier attempts of `reply`'s request queued on its connection, by bucket (empty
    /// unless it is a retry: the same request id and `since`, on the same connection).
    private func queuedBefore(retrying reply: Reply) -> [Int: UInt64] {
        deliveries.last { $0.client == reply.client && $0.requestID == reply.requestID && $0.since == reply.since }?.buckets ?? [:]
    }

    /// Whether reply `index` is a retry that leaves out what earlier attempts queued.
    func isResumed(_ index: Int) -> Bool { !replies[index].queuedBefore.isEmpty }

    /// Keeps what a sync reply queued (with what its earlier attempts did) for a retry of it.
    private mutating func retire(_ reply: Reply) {
        guard !reply.isRepair else { return }
        var buckets = reply.queuedBefore
        for (bucket, left) in reply.unsent where left == 0 { buckets[bucket] = reply.mark.serial }
        guard !buckets.isEmpty else { return }
        deliveries.removeAll { $0.client == reply.client }
        if deliveries.count >= Self.maxDeliveries { deliveries.removeFirst() }
        deliveries.append(Delivery(client: reply.client, requestID: reply.requestID, since: reply.since, buckets: buckets))
    }

    /// The next slice of reply `index`: at most `limit` keys.
    mutating func take(from index: Int, limit: Int) -> ArraySlice<String> {
        let slice = replies[index].pending.prefix(limit)
        replies[index].pending = replies[index].pending.dropFirst(limit)
        return slice
    }

    /// The store read `taken` keys of reply `index` but those `unread` (the turn's bytes were
    /// reached): these go back to the front. Returns the keys read, per bucket, for the turn's
    /// last chunk to carry (`sent(entries:keys:at:now:)`).
    mutating func read(_ taken: [String], unread: [String], at index: Int) -> [Int: Int] {
        if !unread.isEmpty { replies[index].pending = ArraySlice(unread + replies[index].pending) }
        let notRead = Set(unread.map(ExactKey.init))
        var read: [Int: Int] = [:]
        for key in taken where !notRead.contains(ExactKey(key)) { read[StoreDigest.bucket(of: key), default: 0] += 1 }
        return read
    }

    /// Chunks that could not be queued (the requester is not reading fast enough) wait, as
    /// encoded, until `now + retryDelay` (longer once the reply is stalled).
    mutating func hold(_ chunks: [HeldChunk], at index: Int, now: MonotonicInstant) {
        replies[index].held = chunks
        replies[index].retryAt = now + replies[index].offerDelay(now: now)
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

    /// Chunks with `entries` entries, carrying the listed `keys` (per bucket), of reply `index`
    /// were queued (or keys read made no chunk: they were gone from the store).
    mutating func sent(entries: Int, keys: [Int: Int] = [:], at index: Int, now: MonotonicInstant) {
        replies[index].entriesSent += entries
        for (bucket, count) in keys { replies[index].unsent[bucket, default: 0] -= count }
        replies[index].lastProgress = now
    }

    /// Every key of reply `index` has been read: the chunks made now end it.
    func isListed(_ index: Int) -> Bool { replies[index].pending.isEmpty && replies[index].buckets.isEmpty }

    /// Reply `index` is sent: every key read, every chunk queued.
    func isDone(_ index: Int) -> Bool { isListed(index) && replies[index].held.isEmpty }

    /// Reply `index` waits for its requester's queue (its held chunks are offered at `retryAt`).
    func isWaiting(_ index: Int, now: MonotonicInstant) -> Bool { replies[index].retryAt.map { now < $0 } ?? false }

    /// Whether a reply can go on now (so the loop should not sleep).
    func hasReplyReady(now: MonotonicInstant) -> Bool { replies.contains { $0.retryAt.map { now >= $0 } ?? true } }

    /// The earliest moment a waiting reply is offered again.
    var nextRetry: MonotonicInstant? { replies.compactMap(\.retryAt).min() }

    /// The next bucket whose keys reply `index` must list, taken out (nil: none left), and the
    /// serial its keys must be stored after.
    mutating func nextBucket(of index: Int) -> (bucket: Int, storedAfter: UInt64?)? {
        guard let bucket = replies[index].buckets.popFirst() else { return nil }
        let reply = replies[index]
        // An earlier attempt's mark is a mark even at serial 0 (what was loaded at start): a
        // member restarted just before is the common case.
        guard let queued = reply.queuedBefore[bucket] else { return (bucket, reply.storedAfter) }
        return (bucket, max(reply.storedAfter ?? 0, queued))
    }

    /// Keys listed from `bucket` join the reply's queue.
    mutating func append(_ keys: [String], from bucket: Int, to index: Int) {
        replies[index].pending.append(contentsOf: keys)
        replies[index].unsent[bucket, default: 0] += keys.count
    }

    /// Removes the replies at `indices` (finished or failed) and returns them; what a sync
    /// reply queued is kept for a retry of its request.
    @discardableResult
    mutating func remove(at indices: [Int]) -> [Reply] {
        let removed = indices.map { replies[$0] }
        for index in indices.sorted(by: >) { replies.remove(at: index) }
        for reply in removed { retire(reply) }
        return removed
    }
}

extension SyncResponder.Reply {
    /// The answer that a repair's range has left the retransmit buffer (`frame`, one chunk),
    /// when the requester's queue could not take it at once (a sync reply crawling over a slow
    /// link fills it): held and offered again like any reply's chunk. It was dropped, and the
    /// requester learnt nothing until its repair timed out, twice, 20 s or more.
    static func unavailableRepair(client: [UInt8], requester: NodeID, requestID: UInt64, frame: [UInt8],
                                  now: MonotonicInstant) -> Self {
        var reply = Self(client: client, requester: requester, requestID: requestID, mark: .none, isRepair: true, pending: [], lastProgress: now)
        reply.held = [SyncResponder.HeldChunk(frame: frame, entries: 0)]
        return reply
    }
}
