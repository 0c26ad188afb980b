/// A key with its stable hash, computed once: the index's dictionaries hash these 8 bytes, not
/// the key's bytes, on every lookup, insert and resize, and the digest bucket comes from the
/// same number. (The stable hash is not seeded; a member able to craft colliding keys is a
/// trusted member, and collisions only slow lookups down.)
struct IndexKey: Hashable {
    let key: String
    let stableHash: UInt64

    init(_ key: String) {
        self.key = key
        stableHash = StableHash.of(key)
    }

    var bucket: Int { Int(stableHash % UInt64(StoreDigest.bucketCount)) }

    func hash(into hasher: inout Hasher) { hasher.combine(stableHash) }

    /// What a dictionary asks for, answered without `Hasher`: seeding and finalising SipHash for
    /// 8 bytes that are already a good hash was the largest single cost of the index in the
    /// replication profile. Mixed with the dictionary's per-instance seed, so that two tables
    /// still order the same keys differently.
    func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: StableHash.mix(stableHash ^ UInt64(UInt(bitPattern: seed))))
    }

    /// By bytes, as the store compares keys (`ExactKey`), not by `String`'s canonical equivalence.
    static func == (a: IndexKey, b: IndexKey) -> Bool { a.stableHash == b.stableHash && a.key.hasSameBytes(as: b.key) }
}

/// What a store keeps in memory about every key: its version and digest hash, plus the digest.
///
/// The LWW comparison runs against this index, so a merge costs one write per winning entry and
/// no read; only when two entries carry the same version is the stored one read to break the tie.
/// A batch is compared and recorded in one pass (`apply`), each key hashed once and looked up
/// once; a store whose commit then fails puts the index back (`undo`).
struct StoreIndex {
    struct Slot {
        var timestamp: HybridTimestamp
        /// The entry's digest hash (`StoreDigest.hash(of:)`).
        var hash: UInt64
        /// When this process stored the key's current entry (`serial` then); 0 for entries loaded
        /// at start-up. A sync request names a serial and gets only what was stored after it.
        var storedSerial: UInt64
        /// The version's node, numbered by the index's `NodeNumbers`.
        var node: UInt32
        var isTombstone: Bool
    }

    /// In shards (`ShardedTable`): one dictionary of millions of slots doubling at once would
    /// stop the loop, inside a commit, for a second or more.
    private var slots = ShardedTable<Slot>()
    private var nodes = NodeNumbers()
    /// The keys of each digest bucket (unordered), so that a sync reply lists one bucket's keys
    /// without scanning every key. Grows only when a key is new; shrinks when one is removed.
    private var bucketKeys: [[String]] = Array(repeating: [], count: StoreDigest.bucketCount)
    private(set) var digest = StoreDigest()
    private(set) var highestTimestamp = HybridTimestamp.zero
    private(set) var liveCount = 0
    /// Counts stored batches in this process: the store's position in its own history.
    private(set) var serial: UInt64 = 0

    var count: Int { slots.count }

    func contains(_ key: String) -> Bool { slots[IndexKey(key)] != nil }

    /// Whether any key's current version was written by `node` at or before `timestamp` (a
    /// scan of every slot: for rare questions, such as what a leaving node must hand over).
    func holdsVersions(by node: NodeID, through timestamp: HybridTimestamp) -> Bool {
        guard let number = nodes.existingNumber(for: node) else { return false }
        return slots.contains { $0.value.node == number && $0.value.timestamp <= timestamp }
    }

    /// The version recorded for `key`.
    func version(of key: String) -> Version? {
        slots[IndexKey(key)].map { Version(timestamp: $0.timestamp, node: nodes[$0.node]) }
    }

    /// The winners of a batch, already recorded in the index, and what `undo` needs to forget them.
    struct AppliedBatch {
        /// The entries that won, one per key, in first-seen order: what the store must now write.
        /// When every entry of the batch won (the usual case), the batch itself, not a copy.
        var entries: [Entry] = []
        /// The key of each of `entries`, hashed: a store keyed by `IndexKey` hashes nothing again.
        fileprivate(set) var keys: [IndexKey] = []
        /// Each recorded key with the slot it replaced, in recording order.
        fileprivate var replaced: [(key: IndexKey, old: Slot?)] = []
        fileprivate var serialBefore: UInt64 = 0
        fileprivate var highestBefore = HybridTimestamp.zero
        fileprivate var liveCountBefore = 0
    }

    /// Reduces a batch to the entries that win against the index and against each other, one
    /// per key in first-seen order, and records them as stored (one serial for the batch).
    /// `stored` reads the current entry for a version tie; if it throws, nothing stays recorded.
    /// The store must write `entries` and, if that fails, call `undo`.
    ///
    /// The batch is read in place and the winners are kept as positions in it: an entry copied
    /// out of an array costs a retain and a release of its payload, which were the largest
    /// items of the memory store's merge.
    mutating func apply(_ batch: [Entry], stored: (String) throws -> Entry?) rethrows -> AppliedBatch {
        var applied = AppliedBatch(serialBefore: serial, highestBefore: highestTimestamp, liveCountBefore: liveCount)
        // The batch position of each winner, in first-seen order of their keys.
        var winners: [Int] = []
        winners.reserveCapacity(batch.count)
        applied.keys.reserveCapacity(batch.count)
        applied.replaced.reserveCapacity(batch.count)
        let batchSerial = serial + 1
        // Where each key sits in `winners`: built only when a key repeats within the batch.
        var positions: [IndexKey: Int]?
        do {
            try batch.withUnsafeBufferPointer { batch in
                for position in batch.indices {
                    let key = IndexKey(batch[position].key)
                    if let slot = slots[key] {
                        if slot.storedSerial == batchSerial {
                            // Recorded earlier in this batch: compare with that entry, not the store.
                            if positions == nil {
                                positions = Dictionary(uniqueKeysWithValues: zip(applied.keys, applied.keys.indices))
                            }
                            let winner = positions![key]!
                            guard batch[position].supersedes(batch[winners[winner]]) else { continue }
                            winners[winner] = position
                            applied.replaced.append((key, record(Recorded(batch[position]), key: key, serial: batchSerial)))
                            continue
                        }
                        if slot.timestamp != batch[position].version.timestamp {
                            guard slot.timestamp < batch[position].version.timestamp else { continue }
                        } else {
                            let node = nodes[slot.node]
                            if batch[position].version.node != node {
                                guard node < batch[position].version.node else { continue }
                            } else {
                                guard let current = try stored(batch[position].key), batch[position].supersedes(current) else { continue }
                            }
                        }
                    }
                    positions?[key] = winners.count
                    winners.append(position)
                    applied.keys.append(key)
                    applied.replaced.append((key, record(Recorded(batch[position]), key: key, serial: batchSerial)))
                }
            }
        } catch {
            restore(applied)
            throw error
        }
        applied.entries = winners.count == batch.count ? batch : winners.map { batch[$0] }
        if !winners.isEmpty { serial = batchSerial }
        return applied
    }

    /// Forgets a batch recorded by `apply` whose entries could not be stored: the index is as it
    /// was before. Only the batch applied last can be undone.
    mutating func undo(_ applied: AppliedBatch) {
        // Only the last batch applied can be undone: an older one would restore a serial that
        // newer slots already carry, and a later batch would take them for its own.
        precondition(serial == applied.serialBefore + (applied.entries.isEmpty ? 0 : 1), "undo of a batch that is not the last applied")
        restore(applied)
    }

    /// Puts back what `applied` replaced, newest first, and the counters as they were.
    private mutating func restore(_ applied: AppliedBatch) {
        for (key, old) in applied.replaced.reversed() {
            let recorded = old.map { slots.updateValue($0, forKey: key) } ?? slots.removeValue(forKey: key)
            // A key new to the index was appended to its bucket last, and is undone first.
            if old == nil { bucketKeys[key.bucket].removeLast() }
            digest.replace(oldHash: recorded?.hash, newHash: old?.hash ?? 0, bucket: key.bucket)
        }
        serial = applied.serialBefore
        highestTimestamp = applied.highestBefore
        liveCount = applied.liveCountBefore
    }

    /// Records an entry held since before this process started (serial 0).
    mutating func record(_ entry: Entry) {
        record(Recorded(entry), key: IndexKey(entry.key), serial: 0)
    }

    /// What a slot keeps of an entry, read without changing the index: `apply` reads it from
    /// the batch in place, and passing the entry itself to a mutating method made the compiler
    /// copy it first (a retain and a release of its payload per entry, a large item of the
    /// merge's profile).
    private struct Recorded {
        var timestamp: HybridTimestamp
        var hash: UInt64
        var node: NodeID
        var isTombstone: Bool

        init(_ entry: Entry) {
            (timestamp, hash, node, isTombstone) = (entry.version.timestamp, StoreDigest.hash(of: entry), entry.version.node, entry.isTombstone)
        }
    }

    /// Records `version` for `key` and returns the slot it replaced.
    @discardableResult
    private mutating func record(_ version: Recorded, key: IndexKey, serial: UInt64) -> Slot? {
        let slot = Slot(
            timestamp: version.timestamp, hash: version.hash, storedSerial: serial, node: nodes.number(for: version.node),
            isTombstone: version.isTombstone)
        let bucket = key.bucket
        let old = slots.updateValue(slot, forKey: key)
        digest.replace(oldHash: old?.hash, newHash: slot.hash, bucket: bucket)
        if old == nil { bucketKeys[bucket].append(key.key) }
        highestTimestamp = max(highestTimestamp, slot.timestamp)
        liveCount += (slot.isTombstone ? 0 : 1) - ((old.map { $0.isTombstone ? 0 : 1 }) ?? 0)
        return old
    }

    mutating func remove(_ key: String) {
        let indexKey = IndexKey(key)
        guard let old = slots.removeValue(forKey: indexKey) else { return }
        let bucket = indexKey.bucket
        digest.replace(oldHash: old.hash, newHash: 0, bucket: bucket)
        if let position = bucketKeys[bucket].firstIndex(where: { $0.hasSameBytes(as: key) }) { bucketKeys[bucket].remove(at: position) }
        if !old.isTombstone { liveCount -= 1 }
    }

    /// Every key (tombstones included) whose bucket is in `buckets` and whose entry was stored
    /// after serial `since` (nil: whenever; entries loaded at start were stored at 0), in byte
    /// order.
    func keys(inBuckets buckets: [Int], storedAfter since: UInt64? = nil) -> [String] {
        keys(inBuckets: buckets, storedAfter: since, leavingOut: .nothing).keys
    }

    /// The keys of `buckets` stored after `since` (all of them if nil), in byte order, without
    /// those whose current version is in `held`; and how many were left out for that.
    func keys(inBuckets buckets: [Int], storedAfter since: UInt64?, leavingOut held: HeldWrites) -> (keys: [String], leftOut: Int) {
        // The writers' numbers, looked up once: a slot names its writer by number.
        var heldRanges: [UInt32: ClosedRange<HybridTimestamp>] = [:]
        for (writer, range) in held.ranges {
            if let number = nodes.existingNumber(for: writer) { heldRanges[number] = range }
        }
        var keys: [String] = []
        var leftOut = 0
        for bucket in Set(buckets) where bucketKeys.indices.contains(bucket) {
            guard since != nil || !heldRanges.isEmpty else {
                keys += bucketKeys[bucket]
                continue
            }
            for key in bucketKeys[bucket] {
                guard let slot = slots[IndexKey(key)] else { continue }
                if let since, slot.storedSerial <= since { continue }
                if heldRanges[slot.node]?.contains(slot.timestamp) == true {
                    leftOut += 1
                    continue
                }
                keys.append(key)
            }
        }
        return (keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, leftOut)
    }

    /// Keys of tombstones stamped before `cutoff`.
    func tombstones(before cutoff: HybridTimestamp) -> [String] {
        slots.compactMap { $0.value.isTombstone && $0.value.timestamp < cutoff ? $0.key.key : nil }
    }
}
