import Foundation
import Synchronization

/// A store that keeps everything in memory: for unit tests, previews, and the benchmark row
/// that separates the cost of SQLite from the cost of the protocol. Never durable.
public final class MemoryStore: ReplicaStore {
    public let identity: StoreIdentity
    private var index = StoreIndex()
    /// Shared with readers on other threads; written only by the owner.
    private let table = MemoryTable()
    private var quarantine: [QuarantinedEntry] = []
    private var memberTable: [[UInt8]] = []

    final class MemoryTable: StoreReader {
        /// By the key's bytes, as SQLite compares them, and by the index's stable hash of them
        /// (`IndexKey`): a merge stores its winners under the keys the index already hashed. In
        /// shards, as the index is, so that growing never stops the loop for long.
        let entries = Mutex(ShardedTable<Entry>())
        func entry(for key: String) -> Entry? { entries.withLock { $0[IndexKey(key)] } }
        /// The table as it is now, a copy that shares its storage: a listing reads it outside the
        /// lock, so the loop's next merge waits for no scan (it copies the shards it changes).
        var snapshot: ShardedTable<Entry> { entries.withLock { $0 } }
        func entries(prefix: String) -> [Entry] {
            snapshot.lazy.map(\.value).filter { $0.key.hasKeyPrefix(prefix) }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        }
        func liveKeys(_ page: LivePage) -> ListedPage<String> {
            page.listed(from: snapshot.lazy.map(\.value)) { ($0.key, $0.key.utf8.count) }
        }
        func liveEntries(_ page: LivePage) -> ListedPage<Entry> {
            page.listed(from: snapshot.lazy.map(\.value)) { ($0, $0.key.utf8.count + ($0.payload?.count ?? 0)) }
        }
    }

    private var entries: ShardedTable<Entry> { table.snapshot }

    public init(node: NodeID, incarnation: UUID = UUID()) {
        identity = StoreIdentity(node: node, incarnation: incarnation)
    }

    /// Nothing outlives the process, so no run follows one that ended uncleanly (but in a
    /// simulation, which keeps the store across a node's lives: `reopenAfterCrash`).
    public var counterSlotOwner: UUID { slotOwner ?? identity.incarnation }
    private var slotOwner: UUID?

    /// A simulated full disk: while set, every merge fails and changes nothing.
    @_spi(Simulation) public var failingCommits = false
    /// Merges failed that way (a full disk shows only to a node that commits).
    @_spi(Simulation) public private(set) var failedCommits = 0

    /// A simulated crash and restart on this store: what was committed stays, and the run that
    /// follows gives counter increments a new slot, as `SQLiteStore` does after an unclean stop.
    @_spi(Simulation) public func reopenAfterCrash(slotOwner: UUID) {
        self.slotOwner = slotOwner
    }

    /// What a merge on a simulated full disk throws.
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "database or disk is full (simulated)" }
    }

    public var count: Int { index.count }
    public var liveCount: Int { index.liveCount }
    public var digest: StoreDigest { index.digest }
    public var highestTimestamp: HybridTimestamp { index.highestTimestamp }

    public func entry(for key: String) -> Entry? { table.entry(for: key) }

    public func keys(prefix: String) -> [String] {
        entries.values.filter { !$0.isTombstone && $0.key.hasKeyPrefix(prefix) }.map(\.key)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    public func entries(inBuckets buckets: [Int]) -> [Entry] {
        entries(forKeys: index.keys(inBuckets: buckets))
    }

    public func keys(inBuckets buckets: [Int], storedAfter serial: UInt64?, leavingOut held: HeldWrites) -> (keys: [String], leftOut: Int) {
        index.keys(inBuckets: buckets, storedAfter: serial, leavingOut: held)
    }

    public var serial: UInt64 { index.serial }

    public func holdsVersions(by node: NodeID, through timestamp: HybridTimestamp) -> Bool {
        index.holdsVersions(by: node, through: timestamp)
    }

    /// Memory is not read from a file: nothing to find damaged.
    public var readFailure: StoreReadFailure? { nil }
    public var fileNoLongerInPlace: String? { nil }

    public func closeForWriting() -> String? { nil }

    private var lastEpoch: UInt64 = 0

    public func beginEpoch(atLeast: UInt64) -> UInt64 {
        lastEpoch = max(atLeast, lastEpoch + 1)
        return lastEpoch
    }

    public func savedMemberTable() -> [[UInt8]] { memberTable }

    public func saveMemberTable(_ messages: [[UInt8]]) { memberTable = messages }

    private var savedLastContact: UInt64?

    public func lastContact() -> UInt64? { savedLastContact }

    public func saveLastContact(_ wallMillis: UInt64) { savedLastContact = wallMillis }

    public var diskSpace: DiskSpace? { nil }

    public func entries(forKeys keys: [String]) -> [Entry] {
        entries(forKeys: keys, maxBytes: .max).entries
    }

    public func entries(forKeys keys: [String], maxBytes: Int) -> (entries: [Entry], unread: [String]) {
        table.entries.withLock { entries in
            var found: [Entry] = []
            var bytes = 0
            for (position, key) in keys.enumerated() {
                if bytes >= maxBytes { return (found, Array(keys[position...])) }
                guard let entry = entries[IndexKey(key)] else { continue }
                bytes += entry.key.utf8.count + (entry.payload?.count ?? 0)
                found.append(entry)
            }
            return (found, [])
        }
    }

    public func entries(prefix: String) -> [Entry] { table.entries(prefix: prefix) }

    public func removeTombstones(before cutoff: HybridTimestamp, limit: Int) -> [String] {
        let keys = Array(index.tombstones(before: cutoff).prefix(limit))
        table.entries.withLock { entries in
            for key in keys { entries[IndexKey(key)] = nil }
        }
        for key in keys { index.remove(key) }
        return keys
    }

    public func merge(_ batch: [Entry]) throws -> [Entry] {
        if failingCommits {
            failedCommits += 1
            throw DiskFull()
        }
        let applied = index.apply(batch) { table.entry(for: $0) }
        table.entries.withLock { entries in
            for (key, entry) in zip(applied.keys, applied.entries) { entries[key] = entry }
        }
        return applied.entries
    }

    public func makeReader() -> any StoreReader { table }

    public func quarantine(_ entry: Entry, reason: String) {
        quarantine.append(QuarantinedEntry(entry: entry, reason: reason, at: Date()))
    }

    public func quarantined(key: String) -> [QuarantinedEntry] {
        quarantine.filter { $0.entry.key == key }
    }
}
