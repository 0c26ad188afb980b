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

    static func == (a: IndexKey, b: IndexKey) -> Bool { a.stableHash == b.stableHash && a.key == b.key }
}

/// What a store keeps in memory about every key: its version and digest hash, plus the digest.
///
/// The LWW comparison runs against this index, so a merge costs one write per winning entry and
/// no read; only when two entries carry the same version is the stored one read to break the tie.
/// Each key of a batch is hashed once (`IndexKey`), for the comparison and the record both.
struct StoreIndex {
    struct Slot {
        var version: Version
        var hash: UInt64
        var isTombstone: Bool
        /// The key's digest bucket, computed once.
        var bucket: UInt16
        /// When this process stored the key's current entry (`serial` then); 0 for entries loaded
        /// at start-up. A sync request names a serial and gets only what was stored after it.
        var storedSerial: UInt64
    }

    private var slots: [IndexKey: Slot] = [:]
    /// The keys of each digest bucket (unordered), so that a sync reply lists one bucket's keys
    /// without scanning every key. Grows only when a key is new; shrinks when one is removed.
    private var bucketKeys: [[String]] = Array(repeating: [], count: StoreDigest.bucketCount)
    private(set) var digest = StoreDigest()
    private(set) var highestTimestamp = HybridTimestamp.zero
    private(set) var liveCount = 0
    /// Counts stored batches in this process: the store's position in its own history.
    private(set) var serial: UInt64 = 0

    var count: Int { slots.count }

    subscript(key: String) -> Slot? { slots[IndexKey(key)] }

    /// The winners of a batch (see `winners(of:stored:)`) with their hashed keys, to record once
    /// they are stored.
    struct Winners {
        var entries: [Entry] = []
        fileprivate var keys: [IndexKey] = []
    }

    /// Records a batch that was just stored (one serial for the whole batch).
    mutating func record(stored batch: Winners) {
        guard !batch.entries.isEmpty else { return }
        serial += 1
        for (entry, key) in zip(batch.entries, batch.keys) { record(entry, key: key, serial: serial) }
    }

    /// Records an entry; `serial` 0 means "held since before this process started".
    mutating func record(_ entry: Entry, serial: UInt64 = 0) {
        record(entry, key: IndexKey(entry.key), serial: serial)
    }

    private mutating func record(_ entry: Entry, key: IndexKey, serial: UInt64) {
        let hash = StoreDigest.hash(of: entry)
        let bucket = key.bucket
        let old = slots.updateValue(
            Slot(version: entry.version, hash: hash, isTombstone: entry.isTombstone, bucket: UInt16(bucket), storedSerial: serial),
            forKey: key)
        digest.replace(oldHash: old?.hash, newHash: hash, bucket: bucket)
        if old == nil { bucketKeys[bucket].append(entry.key) }
        highestTimestamp = max(highestTimestamp, entry.version.timestamp)
        liveCount += (entry.isTombstone ? 0 : 1) - ((old.map { $0.isTombstone ? 0 : 1 }) ?? 0)
    }

    mutating func remove(_ key: String) {
        guard let old = slots.removeValue(forKey: IndexKey(key)) else { return }
        digest.replace(oldHash: old.hash, newHash: 0, bucket: Int(old.bucket))
        if let position = bucketKeys[Int(old.bucket)].firstIndex(of: key) { bucketKeys[Int(old.bucket)].remove(at: position) }
        if !old.isTombstone { liveCount -= 1 }
    }

    /// Every key (tombstones included) whose bucket is in `buckets` and whose entry was stored
    /// after serial `since` (0: whenever), in byte order.
    func keys(inBuckets buckets: [Int], storedAfter since: UInt64 = 0) -> [String] {
        var keys: [String] = []
        for bucket in Set(buckets) where bucketKeys.indices.contains(bucket) {
            keys += since == 0 ? bucketKeys[bucket] : bucketKeys[bucket].filter { (slots[IndexKey($0)]?.storedSerial ?? 0) > since }
        }
        return keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Keys of tombstones stamped before `cutoff`.
    func tombstones(before cutoff: HybridTimestamp) -> [String] {
        slots.compactMap { $0.value.isTombstone && $0.value.version.timestamp < cutoff ? $0.key.key : nil }
    }

    /// Reduces a batch to the entries that win against the index and against each other,
    /// one per key, in first-seen order. `stored` reads the current entry for a version tie.
    func winners(of batch: [Entry], stored: (String) throws -> Entry?) rethrows -> Winners {
        var best: [IndexKey: Int] = [:]
        best.reserveCapacity(batch.count)
        var result = Winners()
        result.entries.reserveCapacity(batch.count)
        result.keys.reserveCapacity(batch.count)
        for entry in batch {
            let key = IndexKey(entry.key)
            if let index = best[key] {
                if entry.supersedes(result.entries[index]) { result.entries[index] = entry }
                continue
            }
            if let slot = slots[key] {
                if entry.version < slot.version { continue }
                if entry.version == slot.version {
                    guard let current = try stored(entry.key), entry.supersedes(current) else { continue }
                }
            }
            best[key] = result.entries.count
            result.entries.append(entry)
            result.keys.append(key)
        }
        return result
    }
}
