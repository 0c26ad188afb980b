import Foundation

/// Serving: sync requests, repair requests and membership requests that arrive on our ROUTER,
/// and the replies being streamed (see `SyncResponder`).
extension Replica {
    /// Entries read from the store, or taken from a repair, and queued per loop turn for one reply.
    static let keysPerTurn = 2048

    func receiveRequests() {
        guard let syncServer = sockets.syncServer else { return }
        let now = instant()
        for _ in 0..<64 where syncServer.isOpen {
            let message: ReceivedMessage?
            do {
                message = try syncServer.receive(maxFrames: 2, identifyingSender: admission.trust.curve != nil)
            } catch {
                logger.warning("sync receive failed: \(error)")
                return
            }
            guard let message else { return }
            guard admitsConnection(message.sender) else { continue }
            do {
                guard message.frames.count == 2, !message.truncated else { throw WireError.wrongFrameCount(message.frames.count, more: message.truncated) }
                let client = message.frames[0]
                switch try codec.decode(message.frames[1]) {
                case .syncRequest(let request): acceptSync(request, from: client, now: now)
                case .repairRequest(let request): acceptRepair(request, from: client, on: syncServer, now: now)
                case .members(let members): serveMembers(members, to: client, on: syncServer, sender: keyOwner(of: message.sender))
                case let other: throw WireError.misplacedKind(other.kind.rawValue, socket: "the sync ROUTER")
                }
            } catch {
                // The requester's name, when its header was readable (the log said "sync client" only).
                let origin = message.frames.count == 2 ? codec.claimedOrigin(of: message.frames[1]) : nil
                dropMalformed(error, from: origin.map { "sync client \($0) (as its header says)" } ?? "sync client")
            }
        }
    }

    private func acceptSync(_ request: SyncRequest, from client: [UInt8], now: MonotonicInstant) {
        if core.responder.continues(client: client, requestID: request.requestID, since: request.since) {
            // Its reply goes on where it was; its newer bucket hashes are not needed: the
            // reply's mark and what it sends are the first attempt's. (Debug: a client may
            // repeat a request thousands of times.)
            core.counters.syncRequestsServed += 1
            core.counters.syncRetriesResumed += 1
            logger.debug("sync request \(request.requestID) of \(request.origin) asked again: its reply goes on where it was")
            return
        }
        defer { core.duties.requestServed(now: now) }
        var differing = store.digest.differingBuckets(from: request.buckets)
        // Expired tombstones are collected before being offered: the requester would drop them
        // anyway, and keeping them would keep our digests apart. (At most once a second: a
        // collection looks at every key, and requests may come in floods.)
        if !differing.isEmpty && core.duties.requestMayCollect(now: now) && collectTombstones() > 0 {
            differing = store.digest.differingBuckets(from: request.buckets)
        }
        // A mark from this life of ours: the requester holds what we held then; only what we
        // stored since can be news to it. (Serial 0 of this life is a mark too: what we loaded
        // at start, and nothing since.) A serial beyond ours is no mark we gave: a requester's
        // bug, answered in full (it was answered with nothing, and its syncs completed without
        // ever converging). A mark given before an identity came into doubt is not
        // honoured either (`doubt(_:)`).
        let honoured = request.since.epoch == epoch && request.since.serial <= store.serial
            && core.doubts.honours(markSerial: request.since.serial)
        let since = honoured ? request.since.serial : nil
        let reply = SyncResponder.Reply(
            client: client, since: request.since, requester: request.origin, requestID: request.requestID,
            mark: StoreMark(epoch: epoch, serial: store.serial), sequence: core.own.sequence, isRepair: false,
            pending: [], buckets: differing[...], storedAfter: since,
            knownHeld: since == nil ? .nothing : heldWrites(of: request.origin, now: now), lastProgress: now)
        guard admit(reply, now: now) else { return }
        core.counters.syncRequestsServed += 1
        if let index = core.responder.replies.indices.last, core.responder.isResumed(index) {
            core.counters.syncRetriesResumed += 1
            logger.info("sync request \(request.requestID) of \(request.origin) asked again: \(core.responder.replies[index].queuedBefore.count) buckets already sent on its connection go again only with what changed since")
        }
    }

    /// What the requester of a sync that named one of our marks is known to hold, by what we
    /// know of it: its own writes of its current life, and every other writer's (ours
    /// included) through what it reports. Only while we hear it directly: its heartbeats then
    /// tell its current life and reports (one we stopped hearing may have restarted since).
    private func heldWrites(of requester: NodeID, now: MonotonicInstant) -> HeldWrites {
        guard let session = core.sessions[requester], session.hearsDirectly(now: now, base: timing) else { return .nothing }
        return HeldByRequester.writes(
            requester: requester, requesterEpoch: session.stream.epoch, reports: session.heartbeat?.reports ?? [:], responder: identity.node,
            publications: { [stamps = core.own.stamps, sessions = core.sessions, me = identity.node] writer in
                writer == me ? stamps : sessions[writer]?.publications
            },
            margin: configuration.maxClockDrift * 2, doubted: core.doubts.doubted)
    }

    /// Resends published updates (the current entries of their keys), or says at once that they
    /// have left the retransmit buffer.
    private func acceptRepair(_ request: RepairRequest, from client: [UInt8], on socket: any MessageSocket, now: MonotonicInstant) {
        guard request.last - request.first < PeerSession.maxRepair, let keys = core.own.keys(request.first...request.last) else {
            let gone = SyncChunk(origin: identity.node, requestID: request.requestID, index: 0, isLast: true, isUnavailable: true, entries: [])
            let frame = codec.encode(.syncChunk(gone))
            do {
                if try socket.send([client, frame]) { return }
            } catch {
                return  // its connection is gone: it asks again
            }
            _ = admit(.unavailableRepair(client: client, requester: request.origin, requestID: request.requestID, frame: frame, now: now), now: now)
            return
        }
        let reply = SyncResponder.Reply(
            client: client, requester: request.origin, requestID: request.requestID, mark: .none, isRepair: true,
            pending: Self.once(keys[...])[...], lastProgress: now)
        if admit(reply, now: now) { core.counters.repairsServed += 1 }
    }

    /// How long a reply that could queue nothing is stalled: as long as the most patient
    /// requester waits for a chunk.
    var replyStall: Duration { SyncPlanner.longestTimeout(base: timing.requestTimeout) }

    /// Gives `reply` a place among the replies in progress, if there is one (false: refused, and
    /// counted). A reply stalled for `replyStall` gives up its place when all are taken: it is
    /// usually one whose queue drains at the pace of a slow link, but may be one nobody reads.
    private func admit(_ reply: SyncResponder.Reply, now: MonotonicInstant) -> Bool {
        switch core.responder.accept(reply, now: now, stalledAfter: replyStall) {
        case .refused:
            // A bounded number of replies at once, so requests cannot grow memory; a refused
            // requester times out and asks again.
            core.counters.syncRequestsRefused += 1
            return false
        case .tookPlaceOfStalled(let requester):
            logger.warning("reply to \(requester) abandoned for a new request: nothing could be sent for \(replyStall)")
            return true
        case .accepted, .replacedEarlier:
            return true
        }
    }

    /// Sends the next slice of every reply in progress, as far as each requester's queue allows.
    func continueReplies() {
        guard let syncServer = sockets.syncServer, !core.responder.replies.isEmpty else { return }
        let now = instant()
        var finished: [Int] = []
        for index in core.responder.replies.indices where !core.responder.isWaiting(index, now: now) {
            // Chunks its queue could not take last time go first, as encoded: nothing more is
            // read until they are queued.
            var chunks = core.responder.takeHeld(at: index)
            if chunks.isEmpty {
                do {
                    chunks = try readNextChunks(of: index)
                } catch {
                    logger.error("sync read failed: \(error)")
                    finished.append(index)
                    continue
                }
            }
            let reply = core.responder.replies[index]
            var queued = 0
            var queuedEntries = 0
            var queuedKeys: [Int: Int] = [:]
            do {
                for chunk in chunks {
                    guard try syncServer.send([reply.client, chunk.frame]) else { break }
                    queued += 1
                    queuedEntries += chunk.entries
                    queuedKeys.merge(chunk.keys, uniquingKeysWith: +)
                }
            } catch {
                // The requester's connection is gone (ROUTER_MANDATORY): it will ask again.
                logger.debug("reply to \(reply.requester) dropped: \(error)")
                finished.append(index)
                continue
            }
            if queued > 0 { core.responder.sent(entries: queuedEntries, keys: queuedKeys, at: index, now: now) }
            if queued < chunks.count {
                // Its queue is full (it reads slowly, or not at all): the rest waits, encoded.
                core.responder.hold(Array(chunks[queued...]), at: index, now: now)
            } else if core.responder.isDone(index) {
                logger.debug("reply to \(reply.requester) sent \(core.responder.replies[index].entriesSent) entries")
                finished.append(index)
            }
        }
        core.responder.remove(at: finished)
    }

    /// Bytes of entries one reply reads from the store per turn (about two chunks of the
    /// largest values; at most one value more).
    static let replyBytesPerTurn = 2 << 20

    /// Reads the next entries of reply `index` (at most `keysPerTurn` keys, and
    /// `replyBytesPerTurn` bytes and one value more) and encodes them as its next chunks; the
    /// last chunk of the reply says so (an empty one if nothing is left to send).
    private func readNextChunks(of index: Int) throws -> [SyncResponder.HeldChunk] {
        // A sync lists its buckets' keys as it goes: a slice's worth per turn.
        while core.responder.replies[index].pending.count < Self.keysPerTurn, let next = core.responder.nextBucket(of: index) {
            let listed = store.keys(inBuckets: [next.bucket], storedAfter: next.storedAfter, leavingOut: core.responder.replies[index].knownHeld)
            core.counters.syncEntriesLeftOut += listed.leftOut
            core.responder.append(listed.keys, from: next.bucket, to: index)
        }
        // The store stops at the turn's bytes, row by row: values of a reply may be 100 B or
        // 1 MiB, mixed, and 2,048 of the largest read at once would take 2 GiB.
        let keys = Array(core.responder.take(from: index, limit: Self.keysPerTurn))
        let (entries, unread) = try store.entries(forKeys: keys, maxBytes: Self.replyBytesPerTurn)
        let keysRead = core.responder.read(keys, unread: unread, at: index)
        let isLast = core.responder.isListed(index)
        var split = split(entries)
        if split.isEmpty && isLast { split = [[]] }
        // Keys read that made no chunk were gone from the store: nothing of them to send.
        if split.isEmpty { core.responder.sent(entries: 0, keys: keysRead, at: index, now: instant()) }
        let reply = core.responder.replies[index]
        let first = core.responder.numberChunks(split.count, at: index)
        return split.enumerated().map { position, entries in
            let isTurnsLast = position == split.count - 1
            let chunk = SyncChunk(
                origin: identity.node, requestID: reply.requestID, index: first + UInt32(position),
                isLast: isLast && isTurnsLast, mark: reply.mark, sequence: reply.sequence, entries: entries)
            return SyncResponder.HeldChunk(frame: codec.encode(.syncChunk(chunk)), entries: entries.count, keys: isTurnsLast ? keysRead : [:])
        }
    }

    /// A key published twice in a repaired range is read (and sent) once, first place kept.
    private static func once(_ keys: ArraySlice<String>) -> [String] {
        var seen = Set<ExactKey>()
        return keys.filter { seen.insert(ExactKey($0)).inserted }
    }

    /// What an entry takes of a chunk's byte limit (its record, with room for the fields).
    static func chunkBytes(of entry: Entry) -> Int { entry.key.utf8.count + (entry.payload?.count ?? 0) + 96 }

    /// Cuts entries into chunks that respect the entry-count and byte limits.
    func split(_ entries: [Entry]) -> [[Entry]] {
        var chunks: [[Entry]] = []
        var current: [Entry] = []
        var bytes = 0
        for entry in entries {
            let size = Self.chunkBytes(of: entry)
            if !current.isEmpty && (current.count == configuration.limits.maxEntriesPerChunk || bytes + size > configuration.limits.maxChunkBytes) {
                chunks.append(current)
                current = []
                bytes = 0
            }
            current.append(entry)
            bytes += size
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }
}
