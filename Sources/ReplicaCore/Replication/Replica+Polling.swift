import Foundation

/// The loop body: read what arrived, commit it with the queued local writes, publish, notify.
extension Replica {
    public var pollSockets: [ZMQSocket] {
        guard !isShutDown, let syncServer else { return [] }
        var sockets = [syncServer] + authenticationSockets
        for peer in peers {
            sockets.append(peer.subscriber)
            sockets.append(peer.dealer)
            sockets.append(peer.dealerEvents)
            sockets.append(peer.subscriberEvents)
        }
        return sockets
    }

    public var pollTimeout: Duration? {
        guard !isShutDown else { return nil }
        if !pendingWrites.isEmpty || !inbound.isEmpty || !syncResponses.isEmpty { return .zero }
        // Wake at least every 100 ms to age peer states and start syncs.
        return min(max(.zero, nextHeartbeat - .now), .milliseconds(100))
    }

    public func pollDidReturn(readable: [Bool]) {
        guard !isShutDown else { return }
        if readable.first == true { receiveSyncRequests() }
        let base = 1 + authenticationSockets.count
        if readable[1..<base].contains(true) { serviceAuthentication() }
        for index in peers.indices {
            if readable[base + 4 * index] { receivePublished(from: index) }
            if readable[base + 1 + 4 * index] { receiveSyncChunks(from: index) }
            if readable[base + 2 + 4 * index] { receiveDealerEvents(from: index) }
            if readable[base + 3 + 4 * index] { receiveSubscriberEvents(from: index) }
        }
        continueSyncResponses()
        flush()
        runTimers()
    }

    /// Reads up to one batch of updates and heartbeats from a peer's SUB socket.
    private func receivePublished(from index: Int) {
        for _ in 0..<configuration.maxBatch {
            let message: ReceivedMessage?
            do {
                message = try peers[index].subscriber.receive()
            } catch {
                logger.warning("receive failed", metadata: ["peer": "\(peers[index].endpoint)", "error": "\(error)"])
                return
            }
            guard let message else { return }
            do {
                guard !message.truncated else { throw WireError.wrongFrameCount(message.frames.count) }
                switch try codec.decodePublished(message.frames) {
                case .update(let update): receive(update, from: index)
                case .heartbeat(let heartbeat): receive(heartbeat, from: index)
                case .syncRequest, .syncChunk, .repairRequest: throw WireError.unknownKind(0)
                }
            } catch {
                dropMalformed(error, from: peers[index].endpoint.description)
            }
        }
    }

    func dropMalformed(_ error: any Error, from source: String) {
        counters.malformedDropped += 1
        logger.debug("dropped malformed message", metadata: ["from": "\(source)", "error": "\(error)"])
    }

    private func receive(_ update: Update, from index: Int) {
        heard(from: index, node: update.origin)
        if let last = peers[index].lastSequence, update.sequence != last &+ 1 {
            if update.sequence > last {
                noteMissing(last + 1...update.sequence - 1, of: index)
            } else {
                requestSync(with: index, reason: "peer restarted (sequence \(update.sequence) after \(last))")
            }
        }
        peers[index].lastSequence = update.sequence
        accept(update.entry, from: update.origin)
    }

    /// Queues a remote entry for the next commit if its timestamp is acceptable.
    func accept(_ entry: Entry, from node: NodeID) {
        if entry.isTombstone && entry.version.timestamp < tombstoneCutoff {
            // Already collected here (or about to be): taking it back would undo the collection.
            counters.expiredTombstonesDropped += 1
            return
        }
        do {
            try clock.receive(entry.version.timestamp)
        } catch {
            counters.futureTimestampsRejected += 1
            logger.warning("rejected a timestamp from the future", metadata: ["from": "\(node)", "key": "\(entry.key)", "error": "\(error)"])
            return
        }
        inbound.append((entry, node))
    }

    /// Commits queued remote entries and local writes in one transaction, then publishes the
    /// local winners, resumes the writers and tells observers.
    func flush() {
        guard !pendingWrites.isEmpty || !inbound.isEmpty else { return }
        let local = pendingWrites
        let remote = inbound
        pendingWrites.removeAll(keepingCapacity: true)
        inbound.removeAll(keepingCapacity: true)

        let commitStarted = ContinuousClock.now
        let merged = Result { try store.merge(remote.map(\.entry) + local.flatMap(\.entries)) }
        // The one metrics hook on the commit path: once per commit, counts by batch size.
        commitMetrics.record(
            elapsed: .now - commitStarted, local: local.reduce(0) { $0 + $1.entries.count }, remote: remote.count,
            succeeded: (try? merged.get()) != nil)
        let winners: [Entry]
        do {
            winners = try merged.get()
        } catch {
            let reason = "\(error)"
            logger.error("commit failed", metadata: ["local": "\(local.count)", "remote": "\(remote.count)", "error": "\(reason)"])
            // Queued counter increments were not committed: re-read slot totals from the store.
            counterSlots.removeAll()
            for write in local {
                for entry in write.entries {
                    saveErrors[entry.key] = Problem(kind: .save, subject: entry.key, message: reason)
                }
                let key = write.entries.first?.key ?? ""
                write.continuation.resume(throwing: ReplicaError.saveFailed(key: key, reason: reason))
            }
            // Remote entries are not lost: their senders still have them; fetch them again later.
            if !remote.isEmpty { for index in peers.indices { peers[index].syncWanted = true } }
            return
        }
        if !local.isEmpty && !saveErrors.isEmpty {
            logger.info("saves succeed again; clearing \(saveErrors.count) save error(s)")
            saveErrors.removeAll()
        }

        // Which peer each remote winner came through, for observers only (a dictionary of keys
        // costs a hash per entry on the hot path, so none is built when nobody observes).
        var remoteOrigin: [String: NodeID] = [:]
        if !observers.isEmpty {
            remoteOrigin.reserveCapacity(remote.count)
            for item in remote { remoteOrigin[item.entry.key] = item.from }
        }
        // Local writes carry unique timestamps of this node: that is how a winner is known as ours.
        var localStamps = Set<HybridTimestamp>()
        if !local.isEmpty {
            localStamps.reserveCapacity(local.reduce(0) { $0 + $1.entries.count })
            for write in local { for entry in write.entries { localStamps.insert(entry.version.timestamp) } }
        }
        if !remote.isEmpty && !counterSlots.isEmpty { forgetCounterSlots(overwrittenBy: winners, localStamps: localStamps) }
        for entry in winners {
            let isLocal = entry.version.node == identity.node && localStamps.contains(entry.version.timestamp)
            if isLocal {
                publish(entry)
            } else {
                counters.updatesApplied += 1
            }
            if !observers.isEmpty {
                notify(Change(entry: entry, origin: isLocal ? .local : .remote(remoteOrigin[entry.key] ?? entry.version.node)))
            }
        }
        for write in local { write.continuation.resume(returning: write.entries) }
    }

    private func publish(_ entry: Entry) {
        guard let publisher else { return }
        sequence &+= 1
        retransmit.record(entry, sequence: sequence)
        let frames = codec.publishFrames(.update(Update(origin: identity.node, sequence: sequence, entry: entry)))
        do {
            try publisher.send(frames)
            counters.updatesPublished += 1
        } catch {
            // PUB never blocks; a failure here is a closed context. Anti-entropy repairs peers.
            logger.error("publish failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
    }

    private func notify(_ change: Change) {
        for observer in observers.values where change.entry.key.hasPrefix(observer.prefix) {
            observer.continuation.yield(change)
        }
    }
}
