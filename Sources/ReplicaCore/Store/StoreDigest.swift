/// A summary of a store's contents that two nodes can compare cheaply.
///
/// Keys fall into `bucketCount` buckets by a stable hash of the key; each bucket holds the XOR of
/// the hashes of its entries (key, version, tombstone, schema, payload). XOR makes the digest
/// incremental: replacing an entry XORs the old hash out and the new one in. Equal digests mean
/// equal replicated state (up to 64-bit hash collisions); anti-entropy compares bucket by bucket.
public struct StoreDigest: Hashable, Sendable {
    public static let bucketCount = 1024

    public private(set) var buckets: [UInt64]

    public init() { buckets = Array(repeating: 0, count: Self.bucketCount) }

    public init?(buckets: [UInt64]) {
        guard buckets.count == Self.bucketCount else { return nil }
        self.buckets = buckets
    }

    public static func bucket(of key: String) -> Int {
        Int(StableHash.of(key) % UInt64(bucketCount))
    }

    static func hash(of entry: Entry) -> UInt64 {
        var hash = StableHash()
        hash.combine(utf8: entry.key)
        hash.combine(0)
        hash.combine(entry.version.timestamp.rawValue)
        hash.combine(utf8: entry.version.node.rawValue)
        hash.combine(UInt64(entry.schema))
        if let payload = entry.payload {
            hash.combine(1)
            hash.combine(bytes: payload)
        } else {
            hash.combine(2)
        }
        return hash.finalized
    }

    /// Records that `old` (if any) was replaced by `new` in `bucket`.
    mutating func replace(oldHash: UInt64?, newHash: UInt64, bucket: Int) {
        buckets[bucket] ^= (oldHash ?? 0) ^ newHash
    }

    /// One number for the whole store: equal roots mean equal stores.
    public var root: UInt64 {
        var hash = StableHash()
        for bucket in buckets { hash.combine(bucket) }
        return hash.finalized
    }

    /// Indices of buckets whose hashes differ from `other`'s.
    public func differingBuckets(from other: [UInt64]) -> [Int] {
        guard other.count == buckets.count else { return Array(buckets.indices) }
        return buckets.indices.filter { buckets[$0] != other[$0] }
    }
}
