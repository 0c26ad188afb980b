/// Which live entries (not tombstones) one page of a listing reads, in key byte order: the
/// keys starting with `prefix`, after `after`, without those starting with `excludedPrefix`,
/// at most `limit` of them and (for entries) at most about `maxBytes` of keys and payloads.
///
/// `keys` and `export` page through a store of any size with it, each page a bounded read on
/// the store's reader: a listing never builds the whole key set in one reply (twenty
/// `keys` of a 70 MB key set took a node to 2.5 GB) and never waits for, or stalls, the replica's
/// commits. A key that holds a value for the whole listing is listed exactly once; one written
/// or removed while it runs may or may not be.
public struct LivePage: Sendable, Equatable {
    public var prefix: String
    /// The last key of the page before (nil: from the start).
    public var after: String?
    /// Keys starting with this are skipped (the reserved keys of counters and logs, for a
    /// listing of registers only); nil: none.
    public var excludedPrefix: String?
    public private(set) var limit: Int
    /// For entries: the page ends once its keys and payloads reach this (one entry is read
    /// even if it alone is larger).
    public private(set) var maxBytes: Int

    public init(prefix: String = "", after: String? = nil, excludedPrefix: String? = nil, limit: Int, maxBytes: Int = .max) {
        self.prefix = prefix
        self.after = after
        self.excludedPrefix = excludedPrefix
        self.limit = max(1, limit)
        self.maxBytes = maxBytes
    }

    /// Whether `entry` belongs in some page of this listing (the memory store's filter; SQLite
    /// asks the same in SQL).
    func admits(_ entry: Entry) -> Bool {
        !entry.isTombstone && entry.key.hasKeyPrefix(prefix)
            && after.map { $0.utf8.lexicographicallyPrecedes(entry.key.utf8) } ?? true
            && !(excludedPrefix.map { !$0.isEmpty && entry.key.hasKeyPrefix($0) } ?? false)
    }

    /// Collects one page from items read in key order: `add` until it says the page is full,
    /// then `listed(more:)` with whether another item followed.
    struct Collector<Item: Sendable> {
        let page: LivePage
        private(set) var items: [Item] = []
        private var bytes = 0

        init(_ page: LivePage) { self.page = page }

        /// Adds an item that takes `size` bytes; false once the page is full.
        mutating func add(_ item: Item, size: Int) -> Bool {
            items.append(item)
            bytes += size
            return items.count < page.limit && bytes < page.maxBytes
        }

        /// The page; `next` is its last key when `more` items follow it.
        func listed(more: Bool, lastKey: String?) -> ListedPage<Item> {
            ListedPage(items: items, next: more ? lastKey : nil)
        }
    }

    /// The page of `entries` (any order) this listing reads, each item made by `item`: the
    /// memory store's listing, which SQLite makes in SQL.
    func listed<Item: Sendable>(from entries: some Sequence<Entry>, item: (Entry) -> (Item, size: Int)) -> ListedPage<Item> {
        let admitted = entries.filter(admits).sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var collector = Collector<Item>(self)
        var taken = 0
        for entry in admitted {
            taken += 1
            let (made, size) = item(entry)
            guard collector.add(made, size: size) else { break }
        }
        return collector.listed(more: taken < admitted.count, lastKey: taken > 0 ? admitted[taken - 1].key : nil)
    }

}

/// One page of a listing and where the next begins.
public struct ListedPage<Item: Sendable>: Sendable {
    public var items: [Item]
    /// The key the next page starts after; nil: this was the last page.
    public var next: String?

    public init(items: [Item], next: String?) {
        self.items = items
        self.next = next
    }
}
