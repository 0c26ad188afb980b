/// A hash table of `IndexKey`s split into 256 dictionaries by the key's stable hash, so that
/// growing never copies more than a 256th of it at once.
///
/// Why: the store index holds one slot per key, and a Swift `Dictionary` rehashes every entry
/// when it doubles, on the loop thread, inside a commit. Measured (`replica-bench --only store`,
/// a memory store grown to 1,000,000 keys one commit at a time): the longest commit was 224-279
/// ms, about 0.3 us per key held at each doubling, twice over (the index and the memory store's
/// table). A store of a few million keys would stop its loop for longer than the time after
/// which members suspect it. A shard doubles alone, copying its own entries: the same work in
/// all, in 256 pieces at different moments, with no extra work per entry (a table that moved
/// its entries over a few at each write, as Redis does, was tried: it cost 2 us more a save in
/// the replication benchmark, a retain and a release of every entry moved).
struct ShardedTable<Value: Sendable>: Sendable {
    static var shardCount: Int { 256 }

    private var shards: [[IndexKey: Value]] = Array(repeating: [:], count: Self.shardCount)
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }

    /// The shard by the hash's top byte (the dictionaries mix the whole hash with their seed for
    /// their buckets).
    private static func shard(of key: IndexKey) -> Int { Int(truncatingIfNeeded: key.stableHash >> 56) }

    subscript(key: IndexKey) -> Value? {
        get { shards[Self.shard(of: key)][key] }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: IndexKey) -> Value? {
        let old = shards[Self.shard(of: key)].updateValue(value, forKey: key)
        if old == nil { count += 1 }
        return old
    }

    @discardableResult
    mutating func removeValue(forKey key: IndexKey) -> Value? {
        let removed = shards[Self.shard(of: key)].removeValue(forKey: key)
        if removed != nil { count -= 1 }
        return removed
    }

    /// Every value, in no particular order.
    var values: [Value] { map(\.value) }

    /// The largest number of entries one shard holds: what its next doubling copies (for tests).
    var largestShard: Int { shards.map(\.count).max() ?? 0 }
}

extension ShardedTable: Sequence {
    struct Iterator: IteratorProtocol {
        fileprivate let shards: [[IndexKey: Value]]
        fileprivate var shard = 0
        fileprivate var inShard: [IndexKey: Value].Iterator?

        mutating func next() -> (key: IndexKey, value: Value)? {
            while shard < shards.count {
                if inShard == nil { inShard = shards[shard].makeIterator() }
                if let element = inShard?.next() { return element }
                inShard = nil
                shard += 1
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(shards: shards) }

    var underestimatedCount: Int { count }
}
