import Foundation

/// Who a store belongs to: the node's id and the incarnation made when the store was created.
/// A wiped data directory gets a new incarnation (counters use it to keep old increments).
public struct StoreIdentity: Hashable, Sendable, Codable {
    public var node: NodeID
    public var incarnation: UUID
}

/// The durable map `key -> Entry` under one replica, with last-writer-wins merge.
///
/// Stores are used from one actor (the replica's), so they are synchronous and not `Sendable`.
/// `merge` is all-or-nothing: if it throws, nothing was written and the in-memory index is
/// unchanged, so a failed save can be retried with the same entries.
public protocol ReplicaStore: AnyObject {
    var identity: StoreIdentity { get }
    /// The id naming this store's counter slots (`FamilyKey.counterSlot`): its incarnation, or a
    /// new id after a run that did not stop cleanly (see `SQLiteStore.beginRun`).
    var counterSlotOwner: UUID { get }
    /// Number of keys, tombstones included.
    var count: Int { get }
    /// Number of keys holding a value (not tombstones).
    var liveCount: Int { get }
    var digest: StoreDigest { get }
    /// The highest timestamp of any stored version (the clock starts above it).
    var highestTimestamp: HybridTimestamp { get }

    func entry(for key: String) throws -> Entry?
    /// Keys in byte order, optionally only those starting with `prefix`; tombstones are skipped.
    func keys(prefix: String) throws -> [String]
    /// All entries (tombstones included) whose key falls in one of `buckets`, in key order.
    func entries(inBuckets buckets: [Int]) throws -> [Entry]
    /// Every key (tombstones included) whose key falls in one of `buckets` and whose entry was
    /// stored after `serial` (nil: whenever; entries loaded at start count as stored at 0), in
    /// byte order, without those whose current version is in `held` (what a sync requester
    /// holds already); and how many were left out for that.
    func keys(inBuckets buckets: [Int], storedAfter serial: UInt64?, leavingOut held: HeldWrites) -> (keys: [String], leftOut: Int)
    /// How many batches this process has stored: a position in the store's history that sync
    /// requests can name (see `SyncRequest.since`).
    var serial: UInt64 { get }
    /// A new epoch for this process: at least `atLeast`, and above every epoch handed out before
    /// for this store (kept durably), so that a restart is always a later life.
    func beginEpoch(atLeast: UInt64) throws -> UInt64
    /// The member table as the replica last saved it: messages in the wire encoding, opaque to
    /// the store (empty when none was saved). Kept so that a restarted node dials the members it
    /// knew, not only its seeds.
    func savedMemberTable() throws -> [[UInt8]]
    /// Replaces the saved member table.
    func saveMemberTable(_ messages: [[UInt8]]) throws
    /// The last time (wall ms, by a checked clock) this node was in contact with its members, as
    /// saved (`AbsenceCheck`); nil if it never was.
    func lastContact() throws -> UInt64?
    /// Replaces the saved last contact.
    func saveLastContact(_ wallMillis: UInt64) throws
    /// The space of the file system holding this store, one `statvfs` (nil: it keeps nothing
    /// on disk, or the file system cannot say).
    var diskSpace: DiskSpace? { get }
    /// The entries of `keys` that exist (in key order from SQLite, 500 keys at a time; in the
    /// order given from memory).
    func entries(forKeys keys: [String]) throws -> [Entry]
    /// The entries of `keys` that exist, in any order, until their keys and payloads reach
    /// `maxBytes` (at least one is read, if any exists), and the keys not looked at yet: what a
    /// sync reply reads per turn, whose values may each be up to 1 MiB.
    func entries(forKeys keys: [String], maxBytes: Int) throws -> (entries: [Entry], unread: [String])
    /// All entries (tombstones included) whose key starts with `prefix`, in key order: the
    /// members of one counter or log family.
    func entries(prefix: String) throws -> [Entry]
    /// Deletes at most `limit` tombstones stamped before `cutoff` (tombstone garbage collection)
    /// and returns their keys. All-or-nothing, like `merge`. See docs/sharing.md, "Tombstone
    /// retention".
    func removeTombstones(before cutoff: HybridTimestamp, limit: Int) throws -> [String]
    /// Applies a batch in one transaction; returns the entries that won and were written, one
    /// per key, in the order each key first won. A result as long as the batch is the batch
    /// itself, in its order: the commit relies on that (its local writes are last).
    func merge(_ batch: [Entry]) throws -> [Entry]

    /// The owner stops writing (it shut down): the data directory is released for another
    /// store to open; reads keep working. Returns why the stop could not be recorded as clean
    /// (the next start then takes new counter slots), nil if it was or nothing needs recording.
    @discardableResult
    func closeForWriting() -> String?

    /// A reader of committed entries that any thread may use, for synchronous loads.
    func makeReader() throws -> any StoreReader
    /// Whether any key's current version was written by `node` at or before `timestamp`.
    func holdsVersions(by node: NodeID, through timestamp: HybridTimestamp) -> Bool
    /// Damage that a read (by the store or one of its readers) found since the store was
    /// opened: it stays until the store is opened again. Nil for a store in memory.
    var readFailure: StoreReadFailure? { get }
    /// Why the store's file is no longer where the data directory says (deleted, or another
    /// file put in its place) while the store runs: nil while it is, and for a store in memory.
    var fileNoLongerInPlace: String? { get }

    /// Keeps a copy of an entry that could not be decoded, so that a later write over its key
    /// never destroys the only copy. Local to this node, never replicated.
    func quarantine(_ entry: Entry, reason: String) throws
    /// Every quarantined copy for `key`, oldest first.
    func quarantined(key: String) throws -> [QuarantinedEntry]
}

/// Reads committed entries from any thread.
public protocol StoreReader: Sendable {
    func entry(for key: String) throws -> Entry?
    /// Entries (tombstones included) whose key starts with `prefix`, in key order.
    func entries(prefix: String) throws -> [Entry]
    /// One page of the live keys `page` selects, in byte order (keys count toward its bytes).
    func liveKeys(_ page: LivePage) throws -> ListedPage<String>
    /// One page of the live entries `page` selects, in key order.
    func liveEntries(_ page: LivePage) throws -> ListedPage<Entry>
}

/// A kept copy of a value that could not be decoded.
public struct QuarantinedEntry: Sendable, Equatable {
    public var entry: Entry
    public var reason: String
    public var at: Date
}

extension ReplicaStore {
    /// Every key of `buckets` stored after `serial` (nil: whenever), none left out.
    public func keys(inBuckets buckets: [Int], storedAfter serial: UInt64?) -> [String] {
        keys(inBuckets: buckets, storedAfter: serial, leavingOut: .nothing).keys
    }
}
