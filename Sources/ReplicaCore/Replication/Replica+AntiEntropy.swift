import Foundation
import Logging

/// Anti-entropy: pull the entries of differing digest buckets from a peer, merge with LWW.
///
/// The requester sends its bucket hashes over its DEALER; the peer's ROUTER answers with the
/// entries of every bucket whose hash differs, in chunks bounded by entry count and bytes.
/// LWW makes repeats harmless, so a sync can be abandoned and retried at any point.
extension Replica {
    struct SyncResponse {
        var identity: [UInt8]
        var requester: NodeID
        var requestID: UInt64
        /// The keys of the differing buckets not sent yet, found once when the request came.
        var remainingKeys: ArraySlice<String>
        var nextChunk: UInt32 = 0
        var entriesSent = 0
    }

    static let periodicReason = "periodic check"

    static let maxConcurrentReplies = 16

    /// Entries read from the store and sent per loop turn for one reply.
    static let keysPerTurn = 2048

    func startSync(with index: Int) {
        let requestID = nextRequestID
        nextRequestID += 1
        let request = SyncRequest(origin: identity.node, requestID: requestID, buckets: store.digest.buckets)
        do {
            guard try peers[index].dealer.send([codec.encode(.syncRequest(request))]) else { return }
        } catch {
            logger.warning("sync request to \(peers[index].endpoint) failed: \(error)")
            return
        }
        let now = ContinuousClock.now
        let reason = peers[index].syncReason
        peers[index].sync = PeerLink.SyncInFlight(requestID: requestID, reason: reason, started: now, lastProgress: now)
        // A full pass brings everything the peer has now, lost updates included.
        peers[index].missing.removeAll()
        peers[index].repair = nil
        peers[index].syncWanted = false
        peers[index].dealerDisconnected = false
        // Routine periodic checks log at debug; every other sync is worth a line.
        logger.log(level: reason == Self.periodicReason ? .debug : .info,
                   "sync with \(peers[index].node.map(\.rawValue) ?? peers[index].endpoint.description) started (\(reason))")
    }

    /// Most updates asked for in one repair request.
    static let maxRepair: UInt64 = 4096

    /// Asks the peer to resend the oldest range of updates we lost.
    func startRepair(with index: Int) {
        guard let first = peers[index].missing.first else { return }
        let range = first.lowerBound...min(first.upperBound, first.lowerBound + Self.maxRepair - 1)
        let requestID = nextRequestID
        nextRequestID += 1
        let request = RepairRequest(origin: identity.node, requestID: requestID, first: range.lowerBound, last: range.upperBound)
        do {
            guard try peers[index].dealer.send([codec.encode(.repairRequest(request))]) else { return }
        } catch {
            logger.warning("repair request to \(peers[index].endpoint) failed: \(error)")
            return
        }
        if range.upperBound == first.upperBound {
            peers[index].missing.removeFirst()
        } else {
            peers[index].missing[0] = range.upperBound + 1...first.upperBound
        }
        peers[index].repair = PeerLink.RepairInFlight(requestID: requestID, range: range, lastProgress: .now)
        logger.debug("repair requested", metadata: ["peer": "\(peers[index].endpoint)", "range": "\(range)"])
    }

    /// Resends published updates from the retransmit buffer, or says they are gone.
    private func serveRepair(_ request: RepairRequest, to identity: [UInt8], on socket: ZMQSocket) throws {
        guard request.last - request.first < Self.maxRepair, let entries = retransmit.entries(request.first...request.last) else {
            let gone = SyncChunk(origin: self.identity.node, requestID: request.requestID, index: 0, isLast: true, isUnavailable: true, entries: [])
            try socket.send([identity, codec.encode(.syncChunk(gone))])
            return
        }
        let chunks = split(entries)
        for (position, chunk) in chunks.enumerated() {
            let message = SyncChunk(
                origin: self.identity.node, requestID: request.requestID, index: UInt32(position),
                isLast: position == chunks.count - 1, entries: chunk)
            let frame = codec.encode(.syncChunk(message))
            guard try socket.send([identity, frame]) else { return }
            counters.repairBytesSent += frame.count
        }
        counters.repairsServed += 1
    }

    // MARK: Serving

    func receiveSyncRequests() {
        guard let syncServer else { return }
        for _ in 0..<64 {
            let message: ReceivedMessage?
            do {
                message = try syncServer.receive(maxFrames: 2)
            } catch {
                logger.warning("sync receive failed: \(error)")
                return
            }
            guard let message else { return }
            do {
                guard message.frames.count == 2, !message.truncated else {
                    throw WireError.wrongFrameCount(message.frames.count)
                }
                let decoded = try codec.decode(message.frames[1])
                if case .repairRequest(let repair) = decoded {
                    try serveRepair(repair, to: message.frames[0], on: syncServer)
                    continue
                }
                guard case .syncRequest(let request) = decoded else {
                    throw WireError.unknownKind(message.frames[1].count > 2 ? message.frames[1][2] : 0)
                }
                var differing = store.digest.differingBuckets(from: request.buckets)
                // Expired tombstones are collected before being offered: the requester would
                // drop them anyway, and keeping them would keep our digests apart.
                if !differing.isEmpty && collectTombstones() > 0 {
                    differing = store.digest.differingBuckets(from: request.buckets)
                }
                // One reply per requester at a time: a repeated request replaces the old reply.
                syncResponses.removeAll { $0.identity == message.frames[0] }
                // A bounded number of replies at once, so requests cannot grow memory; a refused
                // requester times out and asks again.
                guard syncResponses.count < Self.maxConcurrentReplies else {
                    counters.syncRequestsRefused += 1
                    continue
                }
                syncResponses.append(SyncResponse(
                    identity: message.frames[0], requester: request.origin, requestID: request.requestID,
                    remainingKeys: store.keys(inBuckets: differing)[...]))
                counters.syncRequestsServed += 1
            } catch {
                dropMalformed(error, from: "sync client")
            }
        }
    }

    /// Sends the next chunks of every reply in progress.
    func continueSyncResponses() {
        guard let syncServer, !syncResponses.isEmpty else { return }
        var finished: [Int] = []
        for index in syncResponses.indices {
            var response = syncResponses[index]
            let keys = Array(response.remainingKeys.prefix(Self.keysPerTurn))
            response.remainingKeys = response.remainingKeys.dropFirst(keys.count)
            let entries: [Entry]
            do {
                entries = try store.entries(forKeys: keys)
            } catch {
                logger.error("sync read failed: \(error)")
                finished.append(index)
                continue
            }
            let isDone = response.remainingKeys.isEmpty
            var chunks = split(entries)
            if chunks.isEmpty && isDone { chunks = [[]] }
            do {
                for (position, chunk) in chunks.enumerated() {
                    let message = SyncChunk(
                        origin: identity.node, requestID: response.requestID, index: response.nextChunk,
                        isLast: isDone && position == chunks.count - 1, entries: chunk)
                    let frame = codec.encode(.syncChunk(message))
                    guard try syncServer.send([response.identity, frame]) else {
                        throw ZMQError(code: EAGAIN, operation: "send sync chunk")
                    }
                    counters.syncBytesSent += frame.count
                    response.nextChunk += 1
                    response.entriesSent += chunk.count
                }
            } catch {
                // The requester is gone or not reading; it will time out and ask again.
                logger.warning("sync reply to \(response.requester) abandoned: \(error)")
                finished.append(index)
                continue
            }
            syncResponses[index] = response
            if isDone {
                logger.debug("sync reply to \(response.requester) sent \(response.entriesSent) entries")
                finished.append(index)
            }
        }
        for index in finished.reversed() { syncResponses.remove(at: index) }
    }

    /// Cuts entries into chunks that respect the entry-count and byte limits.
    func split(_ entries: [Entry]) -> [[Entry]] {
        var chunks: [[Entry]] = []
        var current: [Entry] = []
        var bytes = 0
        for entry in entries {
            let size = entry.key.utf8.count + (entry.payload?.count ?? 0) + 96
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

    // MARK: Requesting

    private func applyRepair(_ chunk: SyncChunk, bytes: Int, from index: Int) {
        if chunk.isUnavailable {
            logger.info("\(chunk.origin) no longer holds the updates we lost; syncing instead")
            peers[index].repair = nil
            peers[index].missing.removeAll()
            requestSync(with: index, reason: "lost updates no longer buffered")
            return
        }
        for entry in chunk.entries { accept(entry, from: chunk.origin) }
        counters.repairedUpdates += chunk.entries.count
        counters.repairBytesReceived += bytes
        peers[index].repair?.lastProgress = .now
        if chunk.isLast {
            peers[index].repair = nil
            peers[index].repairsCompleted += 1
            noteCaughtUpIfNothingMissing(index)
        }
    }

    /// Ends the peer's replication lag once no loss is left to repair (a finished sync brought
    /// everything the peer had when it started; losses noted since are still in `missing`).
    private func noteCaughtUpIfNothingMissing(_ index: Int) {
        if peers[index].missing.isEmpty && peers[index].repair == nil { peers[index].behindSince = nil }
    }

    func receiveSyncChunks(from index: Int) {
        // A bounded intake per loop turn (at most 8 chunks, about 8,000 entries), so one commit
        // stays short and heartbeats, local writes and other peers are served in between.
        for _ in 0..<8 {
            let message: ReceivedMessage?
            do {
                message = try peers[index].dealer.receive(maxFrames: 1)
            } catch {
                logger.warning("sync receive failed: \(error)")
                return
            }
            guard let message else { return }
            do {
                guard message.frames.count == 1, !message.truncated else {
                    throw WireError.wrongFrameCount(message.frames.count)
                }
                guard case .syncChunk(let chunk) = try codec.decode(message.frames[0]) else {
                    throw WireError.unknownKind(message.frames[0].count > 2 ? message.frames[0][2] : 0)
                }
                apply(chunk, bytes: message.frames[0].count, from: index)
            } catch {
                dropMalformed(error, from: peers[index].endpoint.description)
            }
        }
    }

    private func apply(_ chunk: SyncChunk, bytes: Int, from index: Int) {
        heard(from: index, node: chunk.origin)
        if let repair = peers[index].repair, repair.requestID == chunk.requestID {
            applyRepair(chunk, bytes: bytes, from: index)
            return
        }
        guard var sync = peers[index].sync, sync.requestID == chunk.requestID else {
            return  // a reply to a request we abandoned
        }
        for entry in chunk.entries { accept(entry, from: chunk.origin) }
        counters.syncEntriesApplied += chunk.entries.count
        counters.syncBytesReceived += bytes
        sync.chunks += 1
        sync.entries += chunk.entries.count
        sync.bytes += bytes
        sync.lastProgress = .now
        if sync.chunks % 100 == 0 {
            logger.info("sync from \(chunk.origin) in progress: \(sync.entries) entries, \(sync.bytes) bytes")
        }
        if chunk.isLast {
            let elapsed = ContinuousClock.now - sync.started
            let level: Logger.Level = sync.entries > 0 || sync.reason != Self.periodicReason ? .info : .debug
            logger.log(level: level, "sync from \(chunk.origin) done (\(sync.reason)): \(sync.entries) entries, \(sync.bytes) bytes in \(elapsed)")
            peers[index].sync = nil
            peers[index].syncsCompleted += 1
            noteCaughtUpIfNothingMissing(index)
        } else {
            peers[index].sync = sync
        }
    }
}
