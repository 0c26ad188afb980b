import Foundation

/// The group commit: queued local writes and received entries in one transaction, then publish
/// the local winners, resume the writers and tell observers.
extension Replica {
    func flush() {
        guard !core.commits.isEmpty else { return }
        // One look for the whole batch: queued writes are refused (a skewed clock, one never
        // compared under `requireClockCheck`, another process with our id), held (until the
        // first clock comparison, at most the grace), or committed.
        let decision = core.commits.writes.isEmpty ? .accept : localWrites(now: instant())
        if case .refuse(let error) = decision {
            refuse(core.commits.takeWrites()) { _ in error }
        }
        let (writes, remote) = core.commits.takeBatch(holdingWrites: decision == .hold)
        guard !writes.isEmpty || !remote.isEmpty else { return }
        let local = writes.map { write in
            (entries: write.requests.map { request in
                Entry(key: request.key, version: Version(timestamp: core.clock.tick(), node: identity.node), schema: request.schema, payload: request.payload)
            }, completion: write.completion)
        }
        let localCount = local.reduce(0) { $0 + $1.entries.count }
        // The received entries first, then the local ones. The received array is moved into the
        // batch (the queue handed it over), so only the local entries are copied.
        let (remoteCount, sources) = (remote.count, remote.sources)
        var batch = (consume remote).entries
        batch.reserveCapacity(remoteCount + localCount)
        for write in local { batch.append(contentsOf: write.entries) }
        let commitStarted = instant()
        let merged = Result { try store.merge(batch) }
        // The one metrics hook on the commit path: once per commit, counts by batch size.
        commitMetrics.record(
            elapsed: instant() - commitStarted, local: localCount, remote: remoteCount,
            succeeded: (try? merged.get()) != nil)
        let winners: [Entry]
        do {
            winners = try merged.get()
        } catch {
            commitFailed(error, local: writes, remoteCount: remoteCount)
            return
        }
        // A batch that wrote nothing (every entry lost to what is stored) did not touch the disk:
        // it proves nothing about a store that has been failing.
        if !winners.isEmpty, let ended = core.commits.committed(now: instant(), disk: store.diskSpace, frameBytes: codec.limits.maxFrameBytes) {
            if let disk = core.commits.shortOfSpace {
                logger.warning("""
                    commits succeed again after \(ended.count) failure(s) since \(ended.first), but the disk has \
                    \(disk.freeBytes) bytes free: the commit problem stays listed until it has room
                    """)
            } else {
                logger.info("commits succeed again after \(ended.count) failure(s) since \(ended.first)")
            }
            core.planner.wantCatchUp(.commitFailed)
        }
        // The refusals of failing commits: their cause is gone once a commit writes, a received
        // entry's as well as a local write's (a node that only receives kept a full disk's
        // refusals listed, and its health alerts firing, until someone wrote to it).
        if !local.isEmpty || !winners.isEmpty, !core.commits.failedSaves.isEmpty {
            logger.info("saves succeed again; clearing \(core.commits.savesWork()) save error(s)")
        }

        // Which member each remote winner came through, for observers only (a dictionary of keys
        // costs a hash per entry on the hot path, so none is built when nobody observes).
        var remoteOrigin: [ExactKey: NodeID] = [:]
        if !callers.observers.isEmpty {
            remoteOrigin.reserveCapacity(remoteCount)
            for (position, source) in sources.enumerated() { remoteOrigin[ExactKey(batch[position].key)] = source }
        }
        // A winner is ours if it carries this node's id and a stamp of this commit: the clock took
        // every received entry in before the first local stamp (`accept`), and stamps only grow,
        // so every other entry of this node's id (its own earlier writes, come back) is below it.
        let firstLocalStamp = localCount > 0 ? batch[remoteCount].version.timestamp : nil
        func isLocal(_ entry: Entry) -> Bool {
            guard let firstLocalStamp else { return false }
            return entry.version.node == identity.node && entry.version.timestamp >= firstLocalStamp
        }
        if remoteCount > 0 && !core.counterSlots.isEmpty { forgetCounterSlots(overwrittenBy: winners, isLocal: isLocal) }
        let published: ArraySlice<Entry>
        if winners.count == batch.count {
            // Every entry won (the usual case): the winners are the batch, local ones last.
            published = winners[remoteCount...]
            core.counters.updatesApplied += remoteCount
        } else {
            var mine: [Entry] = []
            mine.reserveCapacity(localCount)
            for entry in winners {
                if isLocal(entry) {
                    mine.append(entry)
                } else {
                    core.counters.updatesApplied += 1
                }
            }
            published = mine[...]
        }
        // Members first (the latency that matters is theirs), then observers, then writers.
        publish(published)
        if !callers.observers.isEmpty {
            for entry in winners {
                notify(Change(entry: entry, origin: isLocal(entry) ? .local : .remote(remoteOrigin[ExactKey(entry.key)] ?? entry.version.node)))
            }
        }
        for write in local { write.completion.resume(returning: write.entries) }
    }

    /// Nothing of the batch was written. Writers get the error (nothing of theirs is published);
    /// received entries are dropped, to be fetched again by a catch-up sync once commits work.
    private func commitFailed(_ error: any Error, local: [CommitQueue.PendingWrite], remoteCount: Int) {
        let reason = "\(error)"
        if core.commits.failed(reason, now: instant()) {
            logger.error("commit failed", metadata: ["local": "\(local.count)", "remote": "\(remoteCount)", "error": "\(reason)"])
        } else if case let (true, suppressed) = core.warnings.admit("commit", now: instant()) {
            logger.error("commits still fail (\(suppressed + 1) more since the last line; retrying with back-off): \(reason)")
        }
        // (A batch of received entries only keeps the cached counter totals: increments held
        // meanwhile, for the clock check, are still to be committed, and their totals stand.)
        for write in local {
            // Listed in the user's terms: one line per counter or log, not one per slot or element key.
            for request in write.requests { core.commits.saveFailed(FamilyKey.subject(of: request.key), reason: reason) }
        }
        refuse(local) { ReplicaError.saveFailed(key: $0.requests.first?.key ?? "", reason: reason) }
        if remoteCount > 0 {
            forgetSyncMarks()
            core.counters.inboundDroppedOnFailedCommit += remoteCount
            core.planner.wantCatchUp(.commitFailed)
        }
    }

    /// The subject of the problem of failing commits.
    static let commitSubject = "store"

    /// Fails with what a local write meets now (`NodeCore.localWrites`): `leaving`,
    /// `identityClash`, `clockSkew`, `clockUnchecked` or `clockAhead`.
    func throwIfLocalWritesAreRefused() throws {
        if case .refuse(let error) = localWrites(now: instant()) { throw error }
    }

    /// What happens to local writes now, decided in the core.
    func localWrites(now: MonotonicInstant) -> NodeCore.LocalWrites {
        core.localWrites(
            now: now, wallMillis: configuration.wallClock(), requiringCheck: configuration.requireClockCheck,
            hasMembersOrSeeds: hasMembersOrSeeds)
    }

    /// Publishes this commit's local winners: in batches of consecutive sequences, each cut at
    /// `maxBatchBytes` (a lone update goes as a single update, which every version reads).
    private func publish(_ entries: ArraySlice<Entry>) {
        guard !entries.isEmpty else { return }
        // Recorded once the sequences are taken: a sync reply leaves out what members report
        // holding of our stream (`PublishedStamps`).
        guard let publisher = sockets.publisher else {
            core.own.published(clock: core.clock.last, sent: false)
            return
        }
        defer { core.own.published(clock: core.clock.last) }
        let limits = codec.limits
        var start = entries.startIndex
        while start < entries.endIndex {
            var end = start + 1
            if configuration.batchesUpdates {
                var bytes = WireCodec.batchedSize(of: entries[start])
                while end < entries.endIndex, end - start < limits.maxEntriesPerBatch {
                    bytes += WireCodec.batchedSize(of: entries[end])
                    guard bytes <= limits.maxBatchBytes else { break }
                    end += 1
                }
            }
            let batch = entries[start..<end]
            let first = core.own.sequence &+ 1
            for entry in batch { _ = core.own.take(entry.key) }
            let frame: [UInt8]
            if batch.count == 1 && !codec.publishesInline(batch[start]) {
                // Queued per subscriber, a large value would cost its size for each one that
                // reads slowly or not at all: it takes the sequence and stays unpublished, and
                // members fetch it by a repair (kind 5) on seeing the gap, which the heartbeat
                // sent at the next turn shows at once.
                core.counters.largeUpdatesWithheld += 1
                core.duties.runSoon(.heartbeat, now: instant())
                start = end
                continue
            } else if batch.count == 1 {
                frame = codec.publishFrame(.update(Update(origin: identity.node, sequence: first, entry: batch[start])))
            } else {
                // Moved out of the property and back after the send: a uniquely held buffer is
                // written in place, with no copy and no allocation.
                var buffer: [UInt8] = []
                swap(&buffer, &core.own.buffer)
                frame = codec.publishFrame(batchOf: identity.node, firstSequence: first, entries: batch, reusing: consume buffer)
            }
            do {
                try publisher.send(frame: frame)
                core.counters.updatesPublished += batch.count
                core.counters.updateMessagesPublished += 1
            } catch {
                // PUB never blocks; a failure here is a closed context. Repairs fill the gap.
                logger.error("publish failed", metadata: ["updates": "\(batch.count)", "error": "\(error)"])
            }
            if batch.count > 1 { core.own.buffer = frame }
            start = end
        }
    }

    private func notify(_ change: Change) {
        for observer in callers.observers.values where change.entry.key.hasKeyPrefix(observer.prefix) {
            observer.receiver.deliver(change)
        }
    }
}

extension Replica {
    /// After commits failed and a catch-up found nothing missing, why the store does not take
    /// commits yet (nil: it does), with nothing received left to prove it: the disk must have
    /// room for a few of the largest messages (`DiskSpace.roomForCommits`), and a small commit (the
    /// member table, saved anew) must work. (An empty catch-up alone cleared the `commit`
    /// problem on a disk still full: SQLite's log had room for small commits, and health turned
    /// green while every large write was refused.) After a failure the room asked is
    /// `DiskSpace.roomToRecover`, as for a disk that was short of space.
    func commitRefusal() -> String? {
        if let disk = store.diskSpace, disk.lacksRoomForCommits(frameBytes: codec.limits.maxFrameBytes, wasShort: true) {
            return "the disk has \(disk.freeBytes) bytes free, fewer than the \(disk.roomToRecover(frameBytes: codec.limits.maxFrameBytes)) it needs to be trusted with commits again"
        }
        do {
            try store.saveMemberTable(memberTableMessages())
            core.savedMemberTableDigest = core.membership.digest
            return nil
        } catch {
            return "a test commit failed: \(error)"
        }
    }

    /// Looks at the disk's space (every 2 s, and once a heartbeat interval while short of it):
    /// while commits work, the `commit` problem is listed as long as the disk has less free than
    /// a large commit may need, and says how much it has. One `statvfs` on the loop: its commits
    /// use the same file system, so a stalled one stalls them anyway.
    func checkDiskSpace() {
        let disk = store.diskSpace
        switch core.commits.spaceMeasured(disk, frameBytes: codec.limits.maxFrameBytes) {
        case .began:
            if let short = core.commits.shortOfSpace { logger.warning("\(short.shortOfSpaceMessage(frameBytes: codec.limits.maxFrameBytes))") }
        case .ended:
            if disk == nil {
                logger.info("the disk's space can no longer be read: the commit problem is cleared")
            } else {
                logger.info("the disk has room for commits again")
            }
        case .unchanged: break
        }
        if core.commits.fetchOwed(afterLookAt: disk, frameBytes: codec.limits.maxFrameBytes, now: instant()) {
            logger.info("the disk has room again: fetching what failed commits dropped")
            core.planner.wantCatchUp(.commitFailed)
        }
    }
}
