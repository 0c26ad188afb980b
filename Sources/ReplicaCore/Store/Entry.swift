/// One replicated key as every node stores it: a version and either a payload or a tombstone.
///
/// Everything the replication layer moves is an `Entry`; registers, counters and logs are
/// families of entries (see docs/architecture.md).
public struct Entry: Hashable, Sendable {
    public var key: String
    public var version: Version
    /// The schema version of the payload's type (0: not recorded). Carried untouched by nodes
    /// that do not know the type, so a rolling upgrade never loses newer data.
    public var schema: UInt16
    /// The encoded value; nil is a tombstone (the key was removed at `version`).
    public var payload: [UInt8]?

    public init(key: String, version: Version, schema: UInt16 = 0, payload: [UInt8]?) {
        self.key = key
        self.version = version
        self.schema = schema
        self.payload = payload
    }

    public var isTombstone: Bool { payload == nil }

    /// Last-writer-wins: whether `self` replaces `other` for the same key.
    ///
    /// The order is total so that merge is commutative, associative and idempotent even in the
    /// corner case of two different entries with one version (a node id reused after its data
    /// was wiped): version first, then tombstone over value, then schema, then payload bytes.
    /// Two tombstones of one version are ordered by schema too: digests count it, and two nodes
    /// that each kept their own stayed apart for ever.
    public func supersedes(_ other: Entry) -> Bool {
        if version != other.version { return version > other.version }
        switch (payload, other.payload) {
        case (nil, nil): return schema > other.schema
        case (nil, _): return true
        case (_, nil): return false
        case let (mine?, theirs?):
            if schema != other.schema { return schema > other.schema }
            return theirs.lexicographicallyPrecedes(mine)
        }
    }

    /// The winner of two entries for the same key.
    public static func merged(_ a: Entry, _ b: Entry) -> Entry {
        a.supersedes(b) ? a : b
    }
}
