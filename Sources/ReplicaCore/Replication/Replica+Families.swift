import Foundation

/// Counter slots and tombstone collection: the replica-side parts of counters and logs.
extension Replica {
    /// Adds `delta` to this replica's slot of counter `name` (`counterSlotOwner`) and returns the slot's entry
    /// once committed. Increments queued before one commit add up (the running total is kept in
    /// the actor), so concurrent callers in one process never lose each other's increments.
    ///
    /// Throws `SharingError.newerSchema` if the slot was written by a newer program (it is never
    /// overwritten), and `SharingError.counterOverflow` if the total would overflow.
    @discardableResult
    public func addToCounter(_ name: String, delta: Int) async throws -> Entry {
        // `enqueue` queues synchronously (no suspension before the entry is queued), so the next
        // increment, even in the same loop turn, starts from this one's total.
        try await enqueue([counterIncrement(name, delta: delta)])[0]
    }

    /// As `addToCounter`, for callers that do not await (`submit`'s way): `completion` runs on
    /// the replica's loop thread, exactly once, with the slot's entry once durable or the error.
    public nonisolated func submitIncrement(_ name: String, delta: Int, completion: @escaping @Sendable (Result<Entry, any Error>) -> Void) {
        loop.execute { [weak self] in
            guard let self else { return completion(.failure(ReplicaError.shutDown)) }
            self.assumeIsolated { replica in
                do {
                    let request = try replica.counterIncrement(name, delta: delta)
                    replica.core.commits.enqueue(CommitQueue.PendingWrite(requests: [request], completion: .handler { result in
                        completion(result.map { $0[0] })
                    }))
                } catch {
                    completion(.failure(error))
                }
            }
        }
    }

    /// The write that adds `delta` to this replica's slot of counter `name`, its total counted
    /// into the cached slot totals (increments queued before one commit add up).
    private func counterIncrement(_ name: String, delta: Int) throws -> WriteRequest {
        let key = FamilyKey.counterSlot(name, incarnation: counterSlotOwner)
        try refuseNewerSchema(key, known: CounterFamily.slotSchema)
        let current: Int
        if let cached = core.counterSlots[ExactKey(key)] {
            current = cached
        } else if let stored = try store.entry(for: key) {
            current = try CounterFamily.total(of: stored)
        } else {
            current = 0
        }
        let (total, overflow) = current.addingReportingOverflow(delta)
        guard !overflow else { throw SharingError.counterOverflow(name: name) }
        let request = WriteRequest(key: key, payload: CounterFamily.payload(total), schema: CounterFamily.slotSchema)
        // What a write would refuse (shut down, leaving, a skewed clock, a bad name) is refused
        // before the total is cached: a cached total nothing committed would be counted again
        // by the next increment.
        try validate([request], refusingNewerSchemaThan: nil)
        core.counterSlots[ExactKey(key)] = total
        return request
    }

    /// Counter `name` as this replica has it: the sum of every slot.
    public func counter(_ name: String) throws -> CounterSnapshot {
        CounterFamily.snapshot(name, entries: try store.entries(prefix: FamilyKey.counterPrefix(name)))
    }

    /// A remote entry replaced one of our cached slot totals (a restored backup of this data
    /// directory, say): read it from the store next time.
    func forgetCounterSlots(overwrittenBy winners: [Entry], isLocal: (Entry) -> Bool) {
        for entry in winners where core.counterSlots[ExactKey(entry.key)] != nil {
            if isLocal(entry) { continue }
            core.counterSlots[ExactKey(entry.key)] = nil
        }
    }

    /// Tombstones deleted in one transaction: a million expired at once (a bulk delete a
    /// retention ago) held the loop for seconds in one commit, heartbeats unsent, and grew the
    /// log by all of it. 10,000 take a few tens of milliseconds.
    static let tombstonesPerSweep = 10_000

    /// The wall time (ms) by which the retention expires tombstones and departures; nil while
    /// this node's clock cannot say. A clock days ahead took tombstones still live everywhere
    /// for expired, dropped them as they arrived and kept the values they deleted, which came
    /// back on every member once the members had collected theirs. So only while
    /// the clock agrees with the members', by the earlier of its time and theirs. A node with
    /// no members and no seeds at all sweeps by its own clock (nothing arrives to drop, and its
    /// tombstones would otherwise pile up); what arrives (`received`) is kept. While unchecked
    /// or skewed, or alone with members that are down, nothing expires: what is received is
    /// kept and collected later, which is harmless.
    func expiryWallMillis(received: Bool) -> UInt64? {
        let own = configuration.wallClock()
        switch core.clockCheck.verdict {
        case .agrees(let median): return median < 0 ? own - min(own, UInt64(-median)) : own
        // Alone and with nobody to hear: not a node whose members are merely down (or not
        // restored yet: the first tick restores the member table, then sweeps).
        case .alone where !received && !hasMembersOrSeeds: return own
        case .alone, .unverified, .skewed: return nil
        }
    }

    /// Tombstones stamped before this are expired: collected by the sweep, and (`received`)
    /// ignored when they arrive; nil: none is (see `expiryWallMillis`).
    func tombstoneCutoff(received: Bool) -> HybridTimestamp? {
        guard let now = expiryWallMillis(received: received) else { return nil }
        let retention = configuration.tombstoneRetentionMillis
        guard now > retention else { return .zero }
        return HybridTimestamp(wallMillis: min(now - retention, HybridTimestamp.maxWallMillis), logical: 0)
    }

    /// Deletes tombstones older than `tombstoneRetention`, at most `tombstonesPerSweep` (also run
    /// every `tombstoneSweepInterval`, and at the next tick while more are left), and returns
    /// how many were deleted.
    @discardableResult
    public func collectTombstones() -> Int {
        guard !isShutDown, let cutoff = tombstoneCutoff(received: false) else { return 0 }
        do {
            let keys = try store.removeTombstones(before: cutoff, limit: Self.tombstonesPerSweep)
            if !keys.isEmpty {
                core.counters.tombstonesCollected += keys.count
                logger.info("collected \(keys.count) expired tombstone(s)")
            }
            // Some may be left: the rest at the next tick.
            if keys.count == Self.tombstonesPerSweep { core.duties.runSoon(.tombstoneSweep, now: instant()) }
            return keys.count
        } catch {
            logger.error("tombstone collection failed", metadata: ["error": "\(error)"])
            return 0
        }
    }
}
