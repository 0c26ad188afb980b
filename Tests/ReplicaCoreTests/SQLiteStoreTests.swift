import Foundation
import GRDB
import Synchronization
import Testing
@testable import ReplicaCore

@Suite struct SQLiteStoreTests {
    /// A store of node n1 in `directory` that held `entries` and stopped cleanly.
    /// Runs a store in `directory` to its stop: it merges `entries`, `beforeStop` acts on it,
    /// and it is closed for writing. Returns it (closed) and why its stop could not be recorded
    /// as clean (nil if it was).
    @discardableResult
    static func storeStopped(
        in directory: TemporaryDirectory, holding entries: [Entry] = [], beforeStop: (SQLiteStore) throws -> Void = { _ in }
    ) throws -> (store: SQLiteStore, unrecorded: String?) {
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge(entries)
        try beforeStop(store)
        return (store, store.closeForWriting())
    }

    static func entry(_ key: String, _ millis: UInt64, _ node: NodeID = "n1", _ value: String? = "1") -> Entry {
        Entry(key: key, version: Version(timestamp: HybridTimestamp(wallMillis: millis, logical: 0), node: node), payload: value.map { Array($0.utf8) })
    }

    /// Which failed commits say the store is damaged: SQLite finding the file damaged does, on
    /// any commit (the member table, an epoch, a quarantine, a tombstone sweep: not only a
    /// merge); an I/O error or a full disk does not (a quota reached passes when space is freed).
    @Test(arguments: [
        (ResultCode.SQLITE_CORRUPT, true), (.SQLITE_NOTADB, true), (.SQLITE_IOERR, false), (.SQLITE_FULL, false), (.SQLITE_BUSY, false),
    ])
    func aCommitFindingDamageRecordsIt(_ row: (ResultCode, Bool)) throws {
        let failures = StoreReadFailures(path: "/data/replica.sqlite")
        #expect(throws: DatabaseError.self) { try failures.watchCommit { throw DatabaseError(resultCode: row.0) } }
        #expect((failures.current != nil) == row.1)
        #expect(try failures.watchCommit { 7 } == 7)
    }

    @Test func keepsDataIdentityAndDigestAcrossReopen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (identity, digest) = try {
            let first = try SQLiteStore(directory: directory.url, node: "n1")
            #expect(try first.merge([Self.entry("a", 1), Self.entry("b", 2), Self.entry("a", 3, "n2", "\"new\"")]).count == 2)
            return (first.identity, first.digest)
        }()
        let reopened = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(reopened.identity == identity)
        #expect(reopened.digest == digest)
        #expect(try reopened.entry(for: "a") == Self.entry("a", 3, "n2", "\"new\""))
        #expect(reopened.highestTimestamp == HybridTimestamp(wallMillis: 3, logical: 0))
    }

    /// What a commit binds in place (no copy of keys, node ids and payloads) is what the file
    /// holds after a reopen: an empty value apart from a tombstone, keys and node ids stored
    /// inline in their `String` and out of line (over 15 bytes), multi-byte UTF-8, a schema.
    @Test func everyKindOfValueReadsBackAfterAReopen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let longNode = NodeID(rawValue: "a-node-with-a-long-name")!
        let written = [
            Entry(key: "empty", version: Version(timestamp: HybridTimestamp(wallMillis: 1, logical: 1), node: "n1"), payload: []),
            Entry(key: "gone", version: Version(timestamp: HybridTimestamp(wallMillis: 2, logical: 0), node: "n1"), payload: nil),
            Entry(key: "caf\u{E9}/a key longer than fifteen bytes", version: Version(timestamp: HybridTimestamp(wallMillis: 3, logical: 7), node: longNode),
                  schema: 3, payload: Array(repeating: 0xFF, count: 4_000)),
            Entry(key: "k", version: Version(timestamp: HybridTimestamp(wallMillis: 4, logical: 0), node: longNode), payload: [0]),
        ]
        let digest = try {
            let store = try SQLiteStore(directory: directory.url, node: "n1")
            #expect(try store.merge(written) == written)
            return store.digest
        }()
        let reopened = try SQLiteStore(directory: directory.url, node: "n1")
        for entry in written { #expect(try reopened.entry(for: entry.key) == entry) }
        #expect(try reopened.entry(for: "empty")?.isTombstone == false)
        #expect(reopened.digest == digest)
    }

    /// A sync reply's read stops at its byte budget row by row, whatever the sizes (small
    /// values first, then large ones), and hands back the keys it did not look at; reading on
    /// from those returns every entry once. Both stores.
    @Test(arguments: ["sqlite", "memory"])
    func aBoundedReadStopsAtItsBytesAndSaysWhatIsLeft(kind: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store: any ReplicaStore = kind == "sqlite" ? try SQLiteStore(directory: directory.url, node: "n1") : MemoryStore(node: "n1")
        let small = (0..<40).map { Self.entry("a\($0)", 1) }
        let large = (0..<6).map { Self.entry("b\($0)", 1, "n1", String(repeating: "x", count: 100_000)) }
        _ = try store.merge(small + large)
        var wanted = (small + large).map(\.key) + ["absent"]
        var read: [String] = []
        var rounds = 0
        while !wanted.isEmpty {
            rounds += 1
            let (entries, unread) = try store.entries(forKeys: wanted, maxBytes: 250_000)
            #expect(!entries.isEmpty || unread.isEmpty, "each read makes progress")
            #expect(entries.reduce(0) { $0 + $1.key.utf8.count + ($1.payload?.count ?? 0) } < 250_000 + 100_003)
            read += entries.map(\.key)
            wanted = unread
        }
        #expect(read.sorted() == (small + large).map(\.key).sorted())
        #expect(rounds == 3, "40 small and 3 large, then 3 large, then none left")
    }

    /// Keys that are equal strings but different bytes ("cafe\u{301}", "caf\u{E9}") are two keys
    /// to a bounded read too: when it stops after one, the other is handed back, not lost (a
    /// `Set<String>` took it for read, and a sync reply left it out for good).
    @Test func aBoundedReadTellsCanonicallyEqualKeysApart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let (decomposed, precomposed) = ("cafe\u{301}", "caf\u{E9}")
        let value = String(repeating: "v", count: 300_000)
        _ = try store.merge([Self.entry(decomposed, 1, "n1", value), Self.entry(precomposed, 1, "n1", value)])
        let (entries, unread) = try store.entries(forKeys: [precomposed, decomposed], maxBytes: 200_000)
        #expect(entries.count == 1 && entries[0].key.utf8.elementsEqual(decomposed.utf8), "byte order: e (0x65) before \u{E9} (0xC3)")
        #expect(unread.count == 1 && unread[0].utf8.elementsEqual(precomposed.utf8))
        var responder = SyncResponder(maxReplies: 1)
        _ = responder.accept(SyncResponder.Reply(client: [1], requester: "r", requestID: 1, mark: .none, isRepair: false, pending: [], lastProgress: .now))
        let read = responder.read([precomposed, decomposed], unread: unread, at: 0)
        #expect(read.values.reduce(0, +) == 1, "one key read, one handed back")
    }

    /// Entries loaded at start count as stored at serial 0: a mark at serial 0 (a member that
    /// has made no commit since it started) leaves them out, and no mark at all lists them.
    @Test func entriesLoadedAtStartAreStoredAtSerialZero() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try SQLiteStore(directory: directory.url, node: "n1").merge([Self.entry("a", 1)])
        let reopened = try SQLiteStore(directory: directory.url, node: "n1")
        let all = Array(0..<StoreDigest.bucketCount)
        #expect(reopened.serial == 0)
        #expect(reopened.keys(inBuckets: all, storedAfter: nil) == ["a"])
        #expect(reopened.keys(inBuckets: all, storedAfter: 0) == [])
        _ = try reopened.merge([Self.entry("b", 1)])
        #expect(reopened.keys(inBuckets: all, storedAfter: 0) == ["b"])
    }

    @Test func mergeKeepsTheHighestVersionAndReportsOnlyWinners() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge([Self.entry("k", 5)])
        #expect(try store.merge([Self.entry("k", 4)]).isEmpty)
        #expect(try store.merge([Self.entry("k", 5)]).isEmpty)  // idempotent
        #expect(try store.merge([Self.entry("k", 6, "n1", nil)]).count == 1)
        #expect(try store.entry(for: "k")?.isTombstone == true)
        #expect(try store.keys(prefix: "") == [])
        #expect(store.count == 1)
        #expect(store.liveCount == 0)
    }

    @Test func keysFilterByPrefixLiterally() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge(["a_1", "a%2", "ab", "b", "A_1"].enumerated().map { Self.entry($1, UInt64($0 + 1)) })
        #expect(try store.keys(prefix: "a_") == ["a_1"])
        #expect(try store.keys(prefix: "a") == ["a%2", "a_1", "ab"])
    }

    /// Paged listings (`keys`, `export`) from both stores' readers: every live key once, in
    /// byte order, whatever the page size; tombstones and the excluded (reserved) prefix are
    /// skipped; a byte bound ends a page early but never leaves it empty; a full page says where
    /// the next starts, the last says none.
    @Test(arguments: [false, true]) func livePagesListEveryLiveKeyOnce(onDisk: Bool) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store: any ReplicaStore = onDisk ? try SQLiteStore(directory: directory.url, node: "n1") : MemoryStore(node: "n1")
        let live = ["a", "a%", "a_1", "ab", "b", "caf\u{E9}", "cafe\u{301}", "z", "\u{1F}counter/x/1", "\u{1F}log/y/2"]
        _ = try store.merge(live.enumerated().map { Self.entry($1, UInt64($0 + 1)) } + [Self.entry("gone", 20, "n1", nil)])
        let reader = try store.makeReader()
        let byBytes = { (keys: [String]) in keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

        func pages(_ first: LivePage) throws -> [[String]] {
            var page = first
            var pages: [[String]] = []
            while true {
                let listed = try reader.liveKeys(page)
                pages.append(listed.items)
                let entries = try reader.liveEntries(page)
                #expect(entries.items.map(\.key) == listed.items || page.maxBytes != .max, "entries page alike")
                guard let next = listed.next else { return pages }
                #expect(next == listed.items.last)
                page.after = next
            }
        }
        for limit in [1, 2, 3, 100] {
            let listed = try pages(LivePage(limit: limit))
            #expect(listed.joined().map { Array($0.utf8) } == byBytes(live).map { Array($0.utf8) }, "limit \(limit), compared by bytes")
            #expect(listed.dropLast().allSatisfy { $0.count == limit })
            #expect(listed.last?.isEmpty == false, "the last page says it is the last: no empty page after it")
        }
        #expect(try pages(LivePage(excludedPrefix: "\u{1F}", limit: 4)).joined().map { Array($0.utf8) }
            == byBytes(live.filter { !$0.hasPrefix("\u{1F}") }).map { Array($0.utf8) })
        #expect(try pages(LivePage(prefix: "a", limit: 2)).joined().map { $0 } == ["a", "a%", "a_1", "ab"])
        #expect(try pages(LivePage(prefix: "a", after: "a%", limit: 10)) == [["a_1", "ab"]])
        // Keys alone count toward a keys page's bytes: one byte per page is one key per page.
        #expect(try pages(LivePage(limit: 100, maxBytes: 1)).allSatisfy { $0.count == 1 })
        // An entries page counts payloads too, and holds at least one entry.
        #expect(try reader.liveEntries(LivePage(limit: 100, maxBytes: 1)).items.count == 1, "a value over the bound alone")
        #expect(try reader.liveEntries(LivePage(limit: 100, maxBytes: 4)).items.map(\.key) == ["\u{1F}counter/x/1"], "key and value bytes count")
        #expect(try reader.liveEntries(LivePage(prefix: "nothing", limit: 5)).items.isEmpty)
        #expect(try reader.liveEntries(LivePage(prefix: "nothing", limit: 5)).next == nil)
    }

    /// A commit that fails part-way (here a trigger refuses one row, as a full disk would refuse
    /// a page) stores nothing of the batch, and the in-memory index forgets the batch too: the
    /// digest peers compare, the counts and the keys stay as they were, and the same batch
    /// commits once the fault is gone.
    @Test func aFailedCommitLeavesStoreAndIndexAsTheyWere() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge([Self.entry("a", 1), Self.entry("b", 1)])
        let (digest, count, serial) = (store.digest, store.count, store.serial)
        let (liveCount, highest) = (store.liveCount, store.highestTimestamp)
        var waiting = Configuration()
        waiting.busyMode = .timeout(5)  // the store's checkpointer may hold the lock for a moment
        let fault = try DatabaseQueue(path: directory.url.appendingPathComponent(SQLiteStore.fileName).path, configuration: waiting)
        try fault.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON entries WHEN NEW.key = 'poison' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        let batch = [Self.entry("a", 2), Self.entry("c", 2), Self.entry("poison", 2), Self.entry("d", 2)]
        #expect(throws: DatabaseError.self) { try store.merge(batch) }
        #expect(store.digest == digest)
        #expect(store.count == count)
        #expect(store.serial == serial)
        #expect(store.liveCount == liveCount)
        #expect(store.highestTimestamp == highest)
        #expect(store.keys(inBuckets: Array(0..<StoreDigest.bucketCount), storedAfter: nil) == ["a", "b"], "the index lists no key of the batch")
        #expect(try store.entry(for: "a") == Self.entry("a", 1))
        #expect(try store.entry(for: "c") == nil)
        #expect(try store.entries(inBuckets: Array(0..<StoreDigest.bucketCount)).map(\.key) == ["a", "b"])

        try fault.write { db in try db.execute(sql: "DROP TRIGGER refuse") }
        #expect(try store.merge(batch).count == 4)
        #expect(store.count == 5)
        let rebuilt = MemoryStore(node: "n1")
        _ = try rebuilt.merge(store.entries(inBuckets: Array(0..<StoreDigest.bucketCount)))
        #expect(rebuilt.digest == store.digest, "the index matches what the database holds")
    }

    /// A store released and its directory opened again at once, in the same process: the old
    /// store's connections (its checkpointer's too) must not checkpoint or delete the log under
    /// the new one. (This test failed now and then with "disk I/O error" when other suites ran
    /// beside it: the cause was a refused lock closing a descriptor twice, see
    /// `aRefusedLockClosesOnlyItsOwnDescriptor`.)
    @Test func aDirectoryReopenedAtOnceOpensCleanly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for round in 1...20 {
            let store = try SQLiteStore(directory: directory.url, node: "n1")
            _ = try store.merge([Self.entry("k\(round)", UInt64(round))])
            #expect(store.count == round)
        }
        #expect(try SQLiteStore(directory: directory.url, node: "n1").count == 20)
    }

    /// A library user gets the path and the system's reason, not Foundation's error text.
    @Test func aDataDirectoryThatCannotBeMadeSaysWhereAndWhy() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.url.appendingPathComponent("afile")
        try Data("x".utf8).write(to: file)
        let target = file.appendingPathComponent("data")
        #expect(throws: SQLiteStore.UnusableDataDirectory(path: target.path, reason: "not a directory")) {
            try SQLiteStore(directory: target, node: "n1")
        }
    }

    @Test func refusesADataDirectoryOfAnotherNode() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try SQLiteStore(directory: directory.url, node: "n1")
        let error = #expect(throws: SQLiteStore.ForeignDataDirectory.self) { try SQLiteStore(directory: directory.url, node: "n2") }
        #expect(error?.description == "the data directory belongs to node n1, not n2: start it as node n1 "
            + "(`replica-node serve --id n1`), or give node n2 another data directory", "words for library and CLI users alike")
    }

    @Test func aCorruptFileIsMovedAsideNotOverwritten() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try garbage.write(to: directory.url.appendingPathComponent(SQLiteStore.fileName))
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.recoveredFromCorruption)
        #expect(try Data(contentsOf: URL(fileURLWithPath: moved.movedTo)) == garbage)
        #expect(store.count == 0)
        _ = try store.merge([Self.entry("a", 1)])
        #expect(try store.entry(for: "a") != nil)
    }

    /// Counter slots are named by `counterSlotOwner`: the incarnation while every run stops
    /// cleanly; a new id after a run that did not (its disk may have lost commits that members
    /// hold), and after a store of 0.24 or older (unknown).
    @Test func counterSlotsGetANewOwnerAfterARunThatDidNotStopCleanly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        func open() throws -> SQLiteStore { try SQLiteStore(directory: directory.url, node: "n1") }
        let first: UUID
        do {
            let store = try open()
            #expect(store.counterSlotOwner == store.identity.incarnation && !store.lastRunEndedUncleanly, "a new store")
            first = store.counterSlotOwner
            store.closeForWriting()
        }
        do {
            let store = try open()
            #expect(store.counterSlotOwner == first && !store.lastRunEndedUncleanly, "after a clean stop")
            _ = try store.merge([Self.entry("a", 1)])
            // Not closed for writing: the run ends as in a crash.
        }
        let second: UUID
        do {
            let store = try open()
            #expect(store.counterSlotOwner != first && store.uncleanStart == .noRecord)
            second = store.counterSlotOwner
            store.closeForWriting()
        }
        do {
            let store = try open()
            #expect(store.counterSlotOwner == second && !store.lastRunEndedUncleanly)
            store.closeForWriting()
        }
        // A backup of the stopped node, restored after it ran on (rm -rf, then copy back: on ext4
        // the file may get its old inode again): the copy holds the record of the stop it was
        // taken after, and the members may hold increments made since.
        let file = directory.url.appendingPathComponent(SQLiteStore.fileName)
        let backup = TemporaryDirectory()
        defer { backup.remove() }
        try FileManager.default.removeItem(at: backup.url)
        try FileManager.default.copyItem(at: directory.url, to: backup.url)
        do {
            let store = try open()
            #expect(store.counterSlotOwner == second && !store.lastRunEndedUncleanly)
            store.closeForWriting()
        }
        try FileManager.default.removeItem(at: directory.url)
        try FileManager.default.copyItem(at: backup.url, to: directory.url)
        let third: UUID
        do {
            let restored = try open()
            #expect(restored.counterSlotOwner != second && restored.uncleanStart == .fileChanged, "a restored copy")
            third = restored.counterSlotOwner
            restored.closeForWriting()
        }
        // A copy in place, over the file (the same inode).
        let current = try Data(contentsOf: file)
        try current.write(to: file)
        do {
            let store = try open()
            #expect(store.counterSlotOwner != third && store.uncleanStart == .fileChanged, "a file written over")
        }
        let older = try DatabaseQueue(path: file.path)
        try older.write { try $0.execute(sql: "DELETE FROM meta WHERE name IN ('counter_slot_owner', 'stopped_cleanly')") }
        try older.close()
        let store = try open()
        #expect(store.uncleanStart == .noRecord, "a store of 0.24")
    }

    /// The clean-stop record is removed only once a start has begun its run: a start refused
    /// before (another node's id) leaves it for the right start, which keeps its slot.
    @Test func aStartRefusedForAnotherIdKeepsTheCleanStopForTheRightOne() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (first, unrecorded) = try Self.storeStopped(in: directory)
        let owner = first.counterSlotOwner
        #expect(unrecorded == nil, "a clean stop is recorded")
        #expect(throws: SQLiteStore.ForeignDataDirectory.self) { try SQLiteStore(directory: directory.url, node: "n2") }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(store.counterSlotOwner == owner && store.uncleanStart == nil)
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(CleanStopRecord.fileName).path))
    }

    /// A stop that cannot be recorded as clean says why (the replica logs it), and the next start
    /// takes a new slot. With `synchronous = OFF` none is recorded, by design, and the start
    /// says that rather than blaming a crash.
    @Test func aStopThatCannotBeRecordedSaysWhy() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (first, unrecorded) = try Self.storeStopped(in: directory) { _ in
            // Where the record goes, a directory that is not empty: the rename onto it fails.
            let blocker = directory.url.appendingPathComponent(CleanStopRecord.fileName)
            try FileManager.default.createDirectory(at: blocker.appendingPathComponent("in-the-way"), withIntermediateDirectories: true)
        }
        let owner = first.counterSlotOwner
        #expect(unrecorded != nil)
        #expect(first.closeForWriting() == nil, "closed once")
        let after = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(after.counterSlotOwner != owner && after.uncleanStart == .noRecord)
        after.closeForWriting()

        let off = TemporaryDirectory()
        defer { off.remove() }
        do {
            let store = try SQLiteStore(directory: off.url, node: "n1", synchronous: "OFF")
            #expect(store.closeForWriting() == nil, "nothing to warn about")
        }
        #expect(try SQLiteStore(directory: off.url, node: "n1", synchronous: "OFF").uncleanStart == .synchronousOff)
    }

    /// Which check a start failed, so that the log names it.
    @Test(arguments: [
        (Optional<String>.none, true, Optional<String>.some("N"), false, Optional<UncleanStart>.some(.noRecord)),
        ("N", false, "N", false, .fileChanged),
        ("N", true, "0", false, .stopCommitMissing),
        ("N", true, nil, false, .stopCommitMissing),
        ("N", true, "N", true, .logDamaged),
        (nil, false, nil, true, .logDamaged),
        ("N", true, "N", false, nil),
    ])
    func anUncleanStartNamesTheCheckItFailed(
        recordNonce: String?, describesFile: Bool, storedNonce: String?, lostLog: Bool, expected: UncleanStart?
    ) {
        let record = recordNonce.flatMap { CleanStopRecord(text: "\($0) 1 2 3") }
        #expect(UncleanStart.judge(record: record, recordDescribesFile: describesFile, storedNonce: storedNonce, lostLog: lostLog) == expected)
    }

    /// A clean stop leaves everything in the database file and an empty log: the file alone is
    /// a complete copy (copied alone, it lacked the log's commits: 12,000 of 20,000 keys), and
    /// a backup copied in over it later has no log of this file's applied on top of it.
    @Test func aCleanStopLeavesTheFileCompleteAndTheLogEmpty() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.storeStopped(in: directory, holding: (0..<100).map { Self.entry("k\($0)", 1) })
        let log = directory.url.appendingPathComponent(SQLiteStore.fileName + "-wal").path
        #expect(((try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0) == 0)
        let alone = TemporaryDirectory()
        defer { alone.remove() }
        try FileManager.default.copyItem(
            at: directory.url.appendingPathComponent(SQLiteStore.fileName), to: alone.url.appendingPathComponent(SQLiteStore.fileName))
        #expect(try SQLiteStore(directory: alone.url, node: "n1").count == 100)
    }

    /// Closed for writing, a store refuses writes (another process may hold the directory, and
    /// the clean-stop mark must be the run's last commit) and still answers reads.
    @Test func aStoreClosedForWritingRefusesWritesAndStillReads() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge([Self.entry("a", 1)])
        store.closeForWriting()
        #expect(throws: SQLiteStore.ClosedForWriting.self) { try store.merge([Self.entry("b", 2)]) }
        #expect(throws: SQLiteStore.ClosedForWriting.self) { try store.quarantine(Self.entry("c", 3), reason: "test") }
        #expect(try store.entry(for: "a") != nil)
        #expect(try store.entry(for: "b") == nil)
    }

    /// A log whose database file is gone (removed alone, or a move aside interrupted between
    /// its renames) is kept aside and listed: SQLite deleted it at open, with its commits.
    @Test func aLogWithoutItsDatabaseIsKeptAside() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try SQLiteStore(directory: directory.url, node: "n1")
            _ = try store.merge([Self.entry("a", 1)])
            // Not closed for writing, as in a crash: the commit is in the log only.
        }
        let file = directory.url.appendingPathComponent(SQLiteStore.fileName)
        let log = try Data(contentsOf: URL(fileURLWithPath: file.path + "-wal"))
        #expect(log.count > 32)
        try FileManager.default.removeItem(at: file)
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.damagedLogMovedAside)
        #expect(moved.reason.contains("database file replica.sqlite is missing"), "\(moved.reason)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: moved.movedTo)) == log, "kept byte for byte")
    }

    /// Damage the row scan at start cannot see (a NULL where the table allows none, as a stale
    /// log applied to a file copied in over the old one left) is found by SQLite's check, and
    /// the file is kept aside like any corrupt one. (The scan read it as a row, or crashed.)
    @Test func damageOnlySQLitesCheckFindsIsKeptAside() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.storeStopped(in: directory, holding: [Self.entry("a", 1)])
        let file = directory.url.appendingPathComponent(SQLiteStore.fileName).path
        func editSchema(_ from: String, _ to: String) throws {
            let queue = try DatabaseQueue(path: file)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA writable_schema = ON")
                try db.execute(sql: "UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE name = 'entries'", arguments: [from, to])
            }
            try queue.close()
        }
        try editSchema("hlc INTEGER NOT NULL", "hlc INTEGER")
        let queue = try DatabaseQueue(path: file)
        try queue.write { try $0.execute(sql: "INSERT INTO entries(key, hlc, node, schema, payload) VALUES ('b', NULL, 'n1', 0, x'31')") }
        try queue.close()
        try editSchema("hlc INTEGER,", "hlc INTEGER NOT NULL,")

        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.recoveredFromCorruption)
        #expect(moved.reason.contains("NULL value in entries.hlc"), "\(moved.reason)")
        #expect(FileManager.default.fileExists(atPath: moved.movedTo))
        #expect(store.count == 0)
    }

    /// A store file truncated to nothing is not a new store: it is kept aside and reported like
    /// a corrupt one (it started silently as a new incarnation before).
    @Test func anEmptyFileIsKeptAsideAndReported() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.storeStopped(in: directory, holding: [Self.entry("a", 1)])
        let file = directory.url.appendingPathComponent(SQLiteStore.fileName)
        try Data().write(to: file)
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.recoveredFromCorruption)
        #expect(moved.reason.contains("empty"))
        #expect(FileManager.default.fileExists(atPath: moved.movedTo))
        #expect(store.count == 0)
    }

    /// A write-ahead log whose header is damaged was ignored by SQLite without a word, with the
    /// commits in it. It is now moved aside and reported. The header check itself is run on the
    /// real log SQLite wrote first: a valid log must pass it (checksum included); a header that
    /// is valid but of an unknown version is not moved (a newer SQLite's log).
    @Test func aDamagedWriteAheadLogIsKeptAsideAndReported() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.url.appendingPathComponent(SQLiteStore.fileName + "-wal")
        do {
            let store = try SQLiteStore(directory: directory.url, node: "n1")
            _ = try store.merge([Self.entry("a", 1)])
            // Not closed for writing, as in a crash: a clean stop empties the log.
        }
        let written = try Data(contentsOf: log)
        #expect(written.count > 32, "the commit is in the log (no checkpoint on close)")
        #expect(try SQLiteStore.logDamage(at: log.path) == nil, "SQLite's own header passes the check")

        var damaged = written
        damaged.replaceSubrange(0..<8, with: [UInt8](repeating: 0x41, count: 8))
        try damaged.write(to: log)
        #expect(try SQLiteStore.logDamage(at: log.path) == "its header is not a write-ahead log's")
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.damagedLogMovedAside)
        #expect(try Data(contentsOf: URL(fileURLWithPath: moved.movedTo)) == damaged, "kept byte for byte")
        #expect(moved.description.contains("not in the store"))

        store.closeForWriting()

        let probe = directory.url.appendingPathComponent("probe-wal")
        var badChecksum = written
        badChecksum[20] ^= 0xff  // the second salt, under the checksum
        try badChecksum.write(to: probe)
        #expect(try SQLiteStore.logDamage(at: probe.path) == "its header checksum does not match")
        var header = Array(written.prefix(32))
        header.replaceSubrange(8..<12, with: [0, 0, 0, 9])  // page size 9 (bytes 8-11), checksum recomputed below
        func checksummed(_ bytes: [UInt8]) -> [UInt8] {
            let (s0, s1) = SQLiteStore.walHeaderChecksum(bytes)
            return Array(bytes[0..<24]) + withUnsafeBytes(of: s0.bigEndian, Array.init) + withUnsafeBytes(of: s1.bigEndian, Array.init)
        }
        try Data(checksummed(header) + written.dropFirst(32)).write(to: probe)
        #expect(try SQLiteStore.logDamage(at: probe.path)?.hasPrefix("invalid page size") == true)
        header = Array(written.prefix(32))
        header[7] = header[7] &+ 1  // format version 3007001, a valid checksum: a newer SQLite's log
        try Data(checksummed(header) + written.dropFirst(32)).write(to: probe)
        #expect(throws: SQLiteStore.UnknownLogFormat.self, "not damage: left alone, and the store refuses to open") {
            try SQLiteStore.logDamage(at: probe.path)
        }
        try Data(written.prefix(32)).write(to: probe)
        #expect(try SQLiteStore.logDamage(at: probe.path) == nil, "a header without frames holds no commit")
        try Data(written.prefix(20)).write(to: probe)
        #expect(try SQLiteStore.logDamage(at: probe.path) == "it is cut short (20 bytes, less than its 32-byte header)",
                "SQLite reads it as empty, but never leaves one: the commits it held are gone")
        try Data().write(to: probe)
        #expect(try SQLiteStore.logDamage(at: probe.path) == nil, "an empty log is a rewound one")
    }

    /// Corruption inside the entries' cells, the pages' structure intact (counting rows still
    /// passes): found by reading every row at start, and the file is moved aside like any
    /// corrupt one. (The full read ran outside the corruption check: the node did not start.)
    @Test func corruptCellsAreFoundAtStartAndTheFileMovedAside() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = try Self.storeInOneFile(directory.url)
        #expect(try Self.damageCells(of: file) == 3)
        let counted = try DatabaseQueue(path: file.path)
        #expect(try counted.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM entries") } == 2_000, "counting does not see it")
        try counted.close()

        let store = try SQLiteStore(directory: directory.url, node: "n1")
        let moved = try #require(store.recoveredFromCorruption)
        #expect(FileManager.default.fileExists(atPath: moved.movedTo))
        #expect(store.count == 0)
        _ = try store.merge([Self.entry("a", 1)])
        #expect(try store.entry(for: "a") != nil)
    }

    /// A store of 2,000 entries of 200 bytes, closed, with everything in its main file and no
    /// log left, so that bytes changed in the file are what the next read of them sees.
    static func storeInOneFile(_ directory: URL) throws -> URL {
        let file = directory.appendingPathComponent(SQLiteStore.fileName)
        try {
            let store = try SQLiteStore(directory: directory, node: "n1")
            _ = try store.merge((0..<2_000).map { Self.entry("key-\($0)", UInt64($0 + 1), "n1", String(repeating: "v", count: 200)) })
        }()
        let plain = try DatabaseQueue(path: file.path)
        try plain.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
        }
        try plain.close()
        return file
    }

    /// Overwrites the cell contents of three leaf pages (type 0x0A: a leaf of a WITHOUT ROWID
    /// table) in the second half of `file`, past their headers and cell pointers: the pages'
    /// structure stays intact. Written in place, so connections open on the file read it too.
    /// Returns how many pages were damaged.
    static func damageCells(of file: URL) throws -> Int {
        let bytes = try Data(contentsOf: file)
        let pageSize = 4096
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        var damaged = 0
        for page in (bytes.count / pageSize / 2)..<(bytes.count / pageSize) where damaged < 3 && bytes[page * pageSize] == 0x0A {
            try handle.seek(toOffset: UInt64(page * pageSize + 1_024))
            try handle.write(contentsOf: Data(repeating: 0xFF, count: pageSize - 1_024))
            damaged += 1
        }
        try handle.synchronize()
        return damaged
    }

    /// Damage done to the file while the store is open (start-up read every row and found
    /// none): the read that meets it fails, and the store keeps the failure for `status`.
    /// Before, only the caller of that read learned of it, and `health` stayed green.
    @Test func damageFoundByAReadWhileOpenIsKept() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = try Self.storeInOneFile(directory.url)
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(store.recoveredFromCorruption == nil && store.count == 2_000)
        let reader = try store.makeReader()
        #expect(try reader.entry(for: "key-1") != nil)
        #expect(store.readFailure == nil, "a read that works records nothing")

        #expect(try Self.damageCells(of: file) == 3)
        #expect(throws: DatabaseError.self) { _ = try reader.entries(prefix: "") }
        let failure = try #require(store.readFailure)
        #expect(failure.path == file.path && failure.count == 1)
        #expect(failure.reason.contains("malformed"), "SQLite's words: \(failure.reason)")
        #expect(throws: DatabaseError.self) { _ = try reader.entries(prefix: "key-") }
        #expect(store.readFailure?.count == 2 && store.readFailure?.since == failure.since)
    }

    /// A lock let go of is free at once, even while a child process still has the lock file
    /// open: a child being spawned by another thread shares the parent's open files until it
    /// runs its program (here a `fork` that waits on a pipe stands in for it). A plain close
    /// left the `flock` held by the child's copy, and a store reopened at once was refused.
    #if os(Linux)
    @Test func aLockLetGoOfIsFreeWhileAChildStillHasTheFileOpen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var lock: DataDirectoryLock? = try DataDirectoryLock(directory: directory.url)
        var gate: [Int32] = [0, 0]
        try #require(pipe(&gate) == 0)
        let child = fork()
        if child == 0 {
            // Only async-signal-safe calls in the child of a threaded process. Its copy of the
            // write end goes first, or its read would never see the end of the pipe.
            close(gate[1])
            var byte: UInt8 = 0
            _ = read(gate[0], &byte, 1)
            _exit(0)
        }
        try #require(child > 0)
        close(gate[0])
        defer {
            close(gate[1])
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        withExtendedLifetime(lock) {}
        lock = nil
        _ = try DataDirectoryLock(directory: directory.url)
    }
    #endif

    @Test func aDirectoryOpenTwiceIsRefusedWithTheHoldersPID() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try {
            let first = try SQLiteStore(directory: directory.url, node: "n1")
            #expect(throws: DataDirectoryLock.Held(directory: directory.url.path, pid: getpid())) {
                _ = try SQLiteStore(directory: directory.url, node: "n1")
            }
            withExtendedLifetime(first) {}
        }()
        // Released with the store.
        _ = try SQLiteStore(directory: directory.url, node: "n1")
    }

    /// A store file this process may not write, or its -wal or -shm file (here the file alone
    /// bind-mounted read-only: as root, permissions would not stop it), is refused at open,
    /// saying which and what to do, and nothing in it is lost. (SQLite opened it read-only
    /// without a word; the node then stopped with "SQLite error 8: attempt to write a readonly
    /// database" at its first write.)
    @Test(.enabled(if: isRoot, "a read-only bind mount needs root"), arguments: ["", "-wal", "-shm"])
    func aStoreFileThatCannotBeWrittenIsRefusedAtOpenSayingWhich(suffix: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try {
            let store = try SQLiteStore(directory: directory.url, node: "n1")
            #expect(try store.merge([Self.entry("kept", 1)]).count == 1)
        }()
        let store = directory.url.appendingPathComponent(SQLiteStore.fileName).path
        let file = store + suffix  // the -wal and -shm files stay after a close (no checkpoint on close)
        try SmallDisk.run("/bin/mount", "--bind", file, file)
        defer { try? SmallDisk.run("/bin/umount", file) }
        try SmallDisk.run("/bin/mount", "-o", "remount,ro,bind", file)
        #expect(throws: SQLiteStore.ReadOnlyStore(path: store)) { _ = try SQLiteStore(directory: directory.url, node: "n1") }
        #expect(SQLiteStore.ReadOnlyStore(path: "/d/replica.sqlite").description
            == "cannot write the store /d/replica.sqlite (or its -wal and -shm files beside it): read-only for this process; "
            + "make them writable by the user the node runs as (chown or chmod u+w), or mount them read-write")
        #expect(SQLiteStore.ReadOnlyStore(path: "/d/replica.sqlite", inDirectory: true).description
            == "cannot write in the data directory /d: SQLite cannot create the store's -wal and -shm files there; "
            + "make it writable by the user the node runs as (chown or chmod u+w)")
        try SmallDisk.run("/bin/umount", file)
        let reopened = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(try reopened.entry(for: "kept") == Self.entry("kept", 1))
    }

    /// A lock file that cannot be made says which directory and why, in the system's words
    /// (it was `Error Domain=NSPOSIXErrorDomain Code=30 ...` on a read-only file system).
    @Test func aDirectoryThatCannotHoldTheLockSaysWhy() {
        let missing = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString.prefix(6))/data")
        #expect(throws: DataDirectoryLock.Unusable(directory: missing.path, reason: "no such file or directory")) {
            _ = try DataDirectoryLock(directory: missing)
        }
        let text = DataDirectoryLock.Unusable(directory: "/d", reason: "read-only file system").description
        #expect(text == "cannot use data directory /d: cannot create its lock file: read-only file system (a node needs a data directory it can write)")
    }

    /// A refused lock closes its own descriptor once. It used to close it a second time from
    /// `deinit` (which runs when a fully initialised object's `init` throws), and that second
    /// close could hit a file another thread had just opened under the same number: a store's
    /// database, which then failed with "disk I/O error". Here one thread is refused again and
    /// again while another opens a file and checks that its descriptor stays open.
    @Test func aRefusedLockClosesOnlyItsOwnDescriptor() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let held = try DataDirectoryLock(directory: directory.url)
        let probe = directory.url.appendingPathComponent("probe").path
        let done = Mutex(false)
        let closedUnderUs = Mutex(0)
        let proberEnded = DispatchSemaphore(value: 0)
        let prober = Thread {
            var status = stat()
            while !done.withLock({ $0 }) {
                let fd = open(probe, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else { continue }
                for _ in 0..<20 where fstat(fd, &status) != 0 { closedUnderUs.withLock { $0 += 1 } }
                close(fd)
            }
            proberEnded.signal()
        }
        prober.start()
        for _ in 0..<20_000 {
            #expect(throws: DataDirectoryLock.Held.self) { _ = try DataDirectoryLock(directory: directory.url) }
        }
        done.withLock { $0 = true }
        proberEnded.wait()
        #expect(closedUnderUs.withLock { $0 } == 0, "another thread's descriptor was closed by a refused lock")
        withExtendedLifetime(held) {}
    }

    /// A replica that fails to start (its port is taken) lets go of its data directory: the
    /// caller can try again at once with another port, in the same process.
    @Test func aReplicaThatCannotListenReleasesItsDataDirectory() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let holder = try makeReplicas(1)[0]
        var configuration = ReplicaConfiguration(
            node: "late", listen: holder.configuration.listen, peers: [], storage: .directory(directory.url))
        #expect(throws: ZMQError.self) { _ = try Replica(configuration) }
        configuration.listen = Endpoint(host: "127.0.0.1", port: testPorts.pair())
        let replica = try Replica(configuration)
        await replica.shutdown()
        await holder.shutdown()
    }

    @Test func entriesByBucketCoverEveryKeyOnce() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.url, node: "n1")
        _ = try store.merge((0..<500).map { Self.entry("key\($0)", UInt64($0 + 1)) })
        let all = try store.entries(inBuckets: Array(0..<StoreDigest.bucketCount))
        #expect(all.count == 500)
        #expect(Set(all.map(\.key)).count == 500)
    }
}
