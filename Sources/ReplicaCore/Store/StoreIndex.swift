/// What a store keeps in memory about every key: its version and digest hash, plus the digest.
///
/// The LWW comparison runs against this index, so a merge costs one write per winning entry and
/// no read; only when two entries carry the same version is the stored one read to break the tie.
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

    private(set) var slots: [String: Slot] = [:]
    private(set) var digest = StoreDigest()
    private(set) var highestTimestamp = HybridTimestamp.zero
    private(set) var liveCount = 0
    /// Counts stored batches in this process: the store's position in its own history.
    private(set) var serial: UInt64 = 0

    var count: Int { slots.count }

    subscript(key: String) -> Slot? { slots[key] }

    /// Records a batch that was just stored (one serial for the whole batch).
    mutating func record(stored batch: [Entry]) {
        guard !batch.isEmpty else { return }
        serial += 1
        for entry in batch { record(entry, serial: serial) }
    }

    /// Records an entry; `serial` 0 means "held since before this process started".
    mutating func record(_ entry: Entry, serial: UInt64 = 0) {
        let hash = StoreDigest.hash(of: entry)
        let bucket = StoreDigest.bucket(of: entry.key)
        let old = slots.updateValue(
            Slot(version: entry.version, hash: hash, isTombstone: entry.isTombstone, bucket: UInt16(bucket), storedSerial: serial),
            forKey: entry.key)
        digest.replace(oldHash: old?.hash, newHash: hash, bucket: bucket)
        highestTimestamp = max(highestTimestamp, entry.version.timestamp)
        liveCount += (entry.isTombstone ? 0 : 1) - ((old.map { $0.isTombstone ? 0 : 1 }) ?? 0)
    }

    mutating func remove(_ key: String) {
        guard let old = slots.removeValue(forKey: key) else { return }
        digest.replace(oldHash: old.hash, newHash: 0, bucket: Int(old.bucket))
        if !old.isTombstone { liveCount -= 1 }
    }

    /// Every key (tombstones included) whose bucket is in `buckets` and whose entry was stored
    /// after serial `since` (0: whenever), in byte order.
    func keys(inBuckets buckets: [Int], storedAfter since: UInt64 = 0) -> [String] {
        var wanted = [Bool](repeating: false, count: StoreDigest.bucketCount)
        for bucket in buckets where wanted.indices.contains(bucket) { wanted[bucket] = true }
        return slots.compactMap { wanted[Int($0.value.bucket)] && (since == 0 || $0.value.storedSerial > since) ? $0.key : nil }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Keys of tombstones stamped before `cutoff`.
    func tombstones(before cutoff: HybridTimestamp) -> [String] {
        slots.compactMap { $0.value.isTombstone && $0.value.version.timestamp < cutoff ? $0.key : nil }
    }

    /// Reduces a batch to the entries that win against the index and against each other,
    /// one per key, in first-seen order. `stored` reads the current entry for a version tie.
    func winners(of batch: [Entry], stored: (String) throws -> Entry?) rethrows -> [Entry] {
        var best: [String: Int] = [:]
        best.reserveCapacity(batch.count)
        var result: [Entry] = []
        result.reserveCapacity(batch.count)
        for entry in batch {
            if let index = best[entry.key] {
                if entry.supersedes(result[index]) { result[index] = entry }
                continue
            }
            if let slot = slots[entry.key] {
                if entry.version < slot.version { continue }
                if entry.version == slot.version {
                    guard let current = try stored(entry.key), entry.supersedes(current) else { continue }
                }
            }
            best[entry.key] = result.count
            result.append(entry)
        }
        return result
    }
}
