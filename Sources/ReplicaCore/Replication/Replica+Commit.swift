import Foundation

/// The group commit: queued local writes and received entries in one transaction, then publish
/// the local winners, resume the writers and tell observers.
extension Replica {
    func flush() {
        guard !commits.isEmpty else { return }
        let (local, remote) = commits.takeBatch()
        let winners: [Entry]
        do {
            winners = try store.merge(remote.map(\.entry) + local.flatMap(\.entries))
        } catch {
            commitFailed(error, local: local, remote: remote)
            return
        }
        if let ended = commits.committed() {
            logger.info("commits succeed again after \(ended.count) failure(s) since \(ended.first)")
            planner.wantCatchUp(.commitFailed)
        }
        if !local.isEmpty && !saveErrors.isEmpty {
            logger.info("saves succeed again; clearing \(saveErrors.count) save error(s)")
            saveErrors.removeAll()
        }

        // Which member each remote winner came through, for observers only (a dictionary of keys
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

    /// Nothing of the batch was written. Writers get the error (nothing of theirs is published);
    /// received entries are dropped, to be fetched again by a catch-up sync once commits work.
    private func commitFailed(_ error: any Error, local: [CommitQueue.PendingWrite], remote: [CommitQueue.Inbound]) {
        let reason = "\(error)"
        if commits.failed(reason, now: .now) {
            logger.error("commit failed", metadata: ["local": "\(local.count)", "remote": "\(remote.count)", "error": "\(reason)"])
        }
        // Queued counter increments were not committed: re-read slot totals from the store.
        counterSlots.removeAll()
        for write in local {
            for entry in write.entries {
                saveErrors[entry.key] = Problem(kind: .save, subject: entry.key, message: reason)
            }
            let key = write.entries.first?.key ?? ""
            write.continuation.resume(throwing: ReplicaError.saveFailed(key: key, reason: reason))
        }
        if !remote.isEmpty {
            counters.inboundDroppedOnFailedCommit += remote.count
            planner.wantCatchUp(.commitFailed)
        }
    }

    private func publish(_ entry: Entry) {
        guard let publisher else { return }
        sequence &+= 1
        retransmit.record(entry.key, sequence: sequence)
        let frames = codec.publishFrames(.update(Update(origin: identity.node, sequence: sequence, entry: entry)))
        do {
            try publisher.send(frames)
            counters.updatesPublished += 1
        } catch {
            // PUB never blocks; a failure here is a closed context. Repairs fill the gap.
            logger.error("publish failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
    }

    private func notify(_ change: Change) {
        for observer in observers.values where change.entry.key.hasPrefix(observer.prefix) {
            observer.continuation.yield(change)
        }
    }
}
