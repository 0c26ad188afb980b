import CSQLiteConfig
import Foundation
import GRDB
import GRDBSQLite

/// SQLite copies bound text and blobs at bind time.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
/// SQLite reads the bound bytes where they are, for as long as they stay bound (until rebound,
/// cleared or finalized; a trace or `sqlite3_expanded_sql` may read them any time before): for
/// values in scope while the statement steps, whose bindings are cleared before they go.
private let sqliteStatic = unsafeBitCast(0, to: sqlite3_destructor_type.self)

/// The durable store: one SQLite file in WAL mode, written through GRDB.
///
/// The LWW comparison runs against an in-memory index (see `StoreIndex`); the winners of a batch
/// are written in one transaction (group commit). The index records them as it picks them, and
/// forgets them again if the commit fails, so a failed write (read-only or full disk) changes
/// nothing and can be retried.
public final class SQLiteStore: ReplicaStore {
    public static let fileName = "replica.sqlite"

    public let identity: StoreIdentity
    /// Names this store's counter slots: the incarnation, until a run ends without a clean stop.
    /// See `beginRun`.
    public let counterSlotOwner: UUID
    /// Why this start does not follow a clean stop of this same file (a crash, `kill -9`, a
    /// power loss, a damaged log moved aside, a copy such as a restored backup, a version before
    /// 0.25.0), so that counter increments go to a new slot; nil after a clean stop, and for a
    /// new store.
    public let uncleanStart: UncleanStart?
    /// Whether this start created the store (a new or wiped data directory).
    public let created: Bool
    /// The run before this one did not stop cleanly, or the file is a copy: `uncleanStart` says which.
    public var lastRunEndedUncleanly: Bool { uncleanStart != nil }
    public let url: URL
    /// Set when the file found at start-up could not be opened and was moved aside.
    public let recoveredFromCorruption: CorruptFileMovedAside?
    /// Set when the write-ahead log found at start-up was damaged and was moved aside.
    public let damagedLogMovedAside: DamagedLogMovedAside?
    private let database: DatabaseQueue
    private let checkpointer: WALCheckpointer
    /// Fed by SQLite's WAL hook on the writer's connection (retained by the hook until `deinit`
    /// removes it).
    let walProgress = WALProgress()
    /// Held while the store is open for writing: one data directory, one replica.
    private var lock: DataDirectoryLock?
    private var index = StoreIndex()
    /// Damage found by reads since the store was opened, on any of its connections.
    private let readFailures: StoreReadFailures
    /// The database file as opened (see `fileNoLongerInPlace`).
    private let openedFile: FileIdentity?
    /// Not `synchronous = OFF`: a checkpoint ends with the file synced.
    private let syncsCheckpoints: Bool

    /// A database file that could not be opened, kept under a new name instead of deleted.
    public struct CorruptFileMovedAside: Error, CustomStringConvertible, Sendable {
        public var originalPath: String
        public var movedTo: String
        public var reason: String
        public var description: String {
            "database \(originalPath) could not be opened (\(reason)); kept as it was (with its -wal and -shm) at \(movedTo), "
                + "and a fresh one started: see docs/operations.md, \"A corrupt database\""
        }
    }

    /// A write-ahead log whose header is not a valid one. SQLite ignores such a log without a
    /// word, and with it every commit it held since the last checkpoint; it is moved aside
    /// instead, and listed, so that the loss is seen (and the file can be examined).
    public struct DamagedLogMovedAside: Error, CustomStringConvertible, Sendable {
        public var originalPath: String
        public var movedTo: String
        public var reason: String
        public var description: String {
            "write-ahead log \(originalPath) is damaged (\(reason)): the commits it held since the last checkpoint are not "
                + "in the store. Kept as it was at \(movedTo). Members send back what they hold (a sync); writes that only "
                + "this node had are lost: see docs/operations.md, \"A corrupt database\""
        }
    }

    /// The data directory cannot be made (a file in its path, no permission, a read-only disk).
    public struct UnusableDataDirectory: Error, CustomStringConvertible, Equatable, Sendable {
        public var path: String
        public var reason: String
        public var description: String { "cannot create data directory \(path): \(reason)" }
    }

    /// The store's file, or its write-ahead log or shared-memory file, cannot be written by
    /// this process (its permissions, another owner, a read-only mount of the file alone).
    public struct ReadOnlyStore: Error, CustomStringConvertible, Equatable, Sendable {
        public var path: String
        /// SQLite could not create the -wal or -shm file: the directory is what cannot be written.
        public var inDirectory = false
        public var description: String {
            if inDirectory {
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
                return "cannot write in the data directory \(directory): SQLite cannot create the store's -wal and -shm files "
                    + "there; make it writable by the user the node runs as (chown or chmod u+w)"
            }
            return "cannot write the store \(path) (or its -wal and -shm files beside it): read-only for this process; make them "
                + "writable by the user the node runs as (chown or chmod u+w), or mount them read-write"
        }
    }

    /// The data directory belongs to another node.
    public struct ForeignDataDirectory: Error, CustomStringConvertible, Sendable {
        public var expected: NodeID
        public var found: NodeID
        public var description: String {
            "the data directory belongs to node \(found), not \(expected): start it as node \(found) "
                + "(`replica-node serve --id \(found)`), or give node \(expected) another data directory"
        }
    }

    /// Opens (or creates) the store in `directory` for `node`.
    /// `synchronous` is SQLite's `PRAGMA synchronous`: NORMAL survives a process crash (kill -9);
    /// FULL also survives power loss, at the cost of an fsync per commit.
    /// Throws `DataDirectoryLock.Held` if another store (in this process or another) has the
    /// directory open.
    public convenience init(directory: URL, node: NodeID, synchronous: String = "NORMAL") throws {
        try self.init(directory: directory, node: node, synchronous: synchronous, checkpointPolicy: WALCheckpointPolicy())
    }

    init(directory: URL, node: NodeID, synchronous: String = "NORMAL", checkpointPolicy: WALCheckpointPolicy) throws {
        _ = Self.processSettings
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw UnusableDataDirectory(path: directory.path, reason: FileSystemReason.ofDirectory(error, at: directory.path))
        }
        lock = try DataDirectoryLock(directory: directory)
        url = directory.appendingPathComponent(Self.fileName)
        // Before anything opens the file: what the last clean stop recorded, if this is still
        // the file it recorded.
        let path = url.path
        let cleanStop = CleanStopRecord.read(in: directory)
        let cleanStopDescribesFile = cleanStop?.describes(databaseAt: path) ?? false
        readFailures = StoreReadFailures(path: url.path)
        syncsCheckpoints = synchronous.uppercased() != "OFF"
        var moved: CorruptFileMovedAside?
        // Before SQLite opens the log (and, finding it invalid, starts it over).
        damagedLogMovedAside = try Self.moveAsideIfDamaged(log: url.path + "-wal", database: url)
        let opened: (database: DatabaseQueue, index: StoreIndex)
        // The shared-memory index is rebuilt by whatever opens the database; a copy taken first
        // is what gets kept if the files turn out to be corrupt.
        let shmBefore = FileManager.default.contents(atPath: url.path + "-shm")
        do {
            try Self.checkHeader(url)
            opened = try Self.openLoadingIndex(url, synchronous: synchronous)
        } catch let error as DatabaseError where Self.isCorruption(error) {
            moved = try Self.moveAside(url, shm: shmBefore, reason: error.message ?? "\(error.resultCode)")
            opened = try Self.openLoadingIndex(url, synchronous: synchronous)
        }
        let database = opened.database
        self.database = database
        var info = stat()
        openedFile = stat(url.path, &info) == 0 ? FileIdentity(info) : nil
        index = opened.index
        recoveredFromCorruption = moved
        let (identity, created) = try database.write { db in try Self.identity(in: db, node: node) }
        self.identity = identity
        self.created = created
        guard identity.node == node else { throw ForeignDataDirectory(expected: node, found: identity.node) }
        let lostLog = damagedLogMovedAside != nil
        let synchronousOff = synchronous.uppercased() == "OFF"
        (counterSlotOwner, uncleanStart) = try Self.beginRun(
            database, identity: identity, created: created, synchronous: synchronous
        ) { storedNonce in
            UncleanStart.judge(
                record: cleanStop, recordDescribesFile: cleanStopDescribesFile, storedNonce: storedNonce, lostLog: lostLog,
                synchronousOff: synchronousOff)
        }
        CleanStopRecord.remove(in: directory)
        checkpointer = try WALCheckpointer(path: url.path, progress: walProgress, policy: checkpointPolicy)
        // Last, after everything that can throw: the hook retains the progress, and only
        // `deinit` (which runs once every property is set) removes the hook and releases it.
        let progress = Unmanaged.passRetained(walProgress)
        database.writeWithoutTransaction { db in
            _ = sqlite3_wal_hook(db.sqliteConnection, { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                Unmanaged<WALProgress>.fromOpaque(context).takeUnretainedValue().committed(logFrames: Int(frames))
                return SQLITE_OK
            }, progress.toOpaque())
        }
    }

    /// Opens the database and reads every entry into a new index. Reading every row (every cell
    /// and overflow page, not only the tree's pages) is what finds a corrupt file at start, while
    /// it can still be moved aside, rather than at a later read; the connection is closed again
    /// if it fails, so that the file can be moved.
    private static func openLoadingIndex(_ url: URL, synchronous: String) throws -> (DatabaseQueue, StoreIndex) {
        let database = try open(url, synchronous: synchronous)
        do {
            let index = try database.read { db in
                // The row scan below reads every cell; SQLite's own check adds what it cannot
                // see: pages of other tables, the free list, keys out of order, NULLs in NOT
                // NULL columns (a stale -wal applied to a file copied in over the old one made
                // all of these, and the scan passed). About 40 ms for 100,000 entries.
                let verdict = try String.fetchAll(db, sql: "PRAGMA quick_check(5)")
                guard verdict == ["ok"] else {
                    throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "SQLite's check found: " + verdict.joined(separator: "; "))
                }
                var index = StoreIndex()
                let rows = try Row.fetchCursor(db, sql: "SELECT key, hlc, node, schema, payload FROM entries")
                while let row = try rows.next() { index.record(try Self.entry(from: row)) }
                return index
            }
            return (database, index)
        } catch {
            try? database.close()
            throw error
        }
    }

    deinit {
        checkpointer.stop()
        // The hook holds the progress: released once the hook is gone.
        database.writeWithoutTransaction { db in _ = sqlite3_wal_hook(db.sqliteConnection, nil, nil) }
        Unmanaged.passUnretained(walProgress).release()
    }

    /// SQLite's process-wide settings, applied once before the first connection opens (see
    /// `sqlite3_config_memstatus_off`). SQLITE_MISUSE means something in the process opened
    /// SQLite first: the settings stay SQLite's defaults, which is slower only. (Connections
    /// need no mutex of their own: GRDB opens them SQLITE_OPEN_NOMUTEX and serialises each.)
    private static let processSettings: Int32 = sqlite3_config_memstatus_off()

    /// Passes the background checkpointer has run so far.
    var checkpointPasses: Int { checkpointer.passes }

    /// Runs one checkpoint pass now (the background thread runs them when `WALCheckpointPolicy` says).
    @discardableResult
    func checkpointNow() throws -> WALCheckpointer.Pass { try checkpointer.checkpoint() }

    @discardableResult
    public func closeForWriting() -> String? {
        guard lock != nil else { return nil }
        checkpointer.stop()
        defer { lock = nil }
        // Not for a file found damaged, which is kept exactly as it is; nor for one deleted or
        // replaced meanwhile (the record would describe another file, or land in a directory
        // another process made since).
        if let damage = readFailures.current { return "the store is damaged: \(damage.reason)" }
        if let gone = fileNoLongerInPlace { return "the database file \(gone)" }
        return recordCleanStop()
    }

    /// The end of a run that stopped cleanly (see `beginRun`): a nonce committed as the run's
    /// last commit; the log emptied into the file, which SQLite syncs; then the record beside it.
    /// If the commit survives, so did every one before it (a log is replayed in order, up to its
    /// first invalid frame). Emptying the log also makes a stopped node's file complete by
    /// itself (a copy of it alone lacked the log's commits), and leaves no log of this file's to
    /// be applied to a backup copied in over it later. Any step that fails (a full disk, a
    /// reader holding part of the log) leaves no record: the next run takes new counter slots,
    /// which is safe; the error is returned for the log.
    private func recordCleanStop() -> String? {
        let nonce = UUID().uuidString
        do {
            try database.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('stopped_cleanly', ?)", arguments: [nonce])
            }
            // SQLite syncs the file at the end of a complete checkpoint (not with `synchronous =
            // OFF`, which gets no record). No descriptor of our own: closing one would drop
            // every POSIX lock this process holds on the file, SQLite's included.
            try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            guard syncsCheckpoints else { return nil }  // by design: see `UncleanStart.synchronousOff`
            guard let record = CleanStopRecord(nonce: nonce, databaseAt: url.path) else { return "the database file could not be read" }
            try record.write(in: url.deletingLastPathComponent())
            return nil
        } catch {
            return "\(FileSystemReason.of(error))"
        }
    }

    /// Closed for writing, the directory is no longer ours (another process may hold it), and
    /// the clean-stop mark must be the run's last commit: a write now is refused.
    private func requireOpenForWriting() throws {
        guard lock != nil else { throw ClosedForWriting(path: url.path) }
    }

    /// A write after `closeForWriting`.
    public struct ClosedForWriting: Error, CustomStringConvertible, Equatable, Sendable {
        public var path: String
        public var description: String { "the store \(path) is closed for writing: the replica shut down" }
    }

    /// Decides which id names this store's counter slots for this run, and records that a run is
    /// under way (`stopped_cleanly` 0; `closeForWriting` sets it to its `CleanStopRecord`'s
    /// nonce).
    ///
    /// A counter slot holds its owner's running total, and each increment writes the slot anew
    /// from the total stored here. With `synchronous = NORMAL` a power loss (or a damaged log set
    /// aside) loses the last commits, which members already hold: a slot total T at version v.
    /// The next increment here would start from the older total and, stamped after v, replace T
    /// on every member: the lost increments lost everywhere. So after a run that did not stop
    /// cleanly (a `kill -9` looks the same, and costs only a slot), increments go to a new slot;
    /// the old one keeps the members' total, which the start-up sync brings back here. So do they
    /// in a copy of the file (a backup restored), whose change time is not the one its last clean
    /// stop recorded: the members may hold increments made after the copy.
    ///
    /// The record is committed with `synchronous = FULL` (one fsync): a run whose increments
    /// survived a power loss must not look like one that stopped cleanly.
    private static func beginRun(
        _ database: DatabaseQueue, identity: StoreIdentity, created: Bool, synchronous: String,
        judge: (_ storedNonce: String?) -> UncleanStart?
    ) throws -> (owner: UUID, unclean: UncleanStart?) {
        try database.writeWithoutTransaction { db in
            let stored = try Dictionary(
                uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT name, value FROM meta WHERE name IN ('counter_slot_owner', 'stopped_cleanly')")
                    .map { (($0["name"] as String), ($0["value"] as String)) })
            // A store written before 0.25.0 has neither record: its slots are the incarnation's,
            // and whether its last run stopped cleanly is unknown.
            let previous = stored["counter_slot_owner"].flatMap { UUID(uuidString: $0) } ?? identity.incarnation
            let unclean = created ? nil : judge(stored["stopped_cleanly"])
            let owner = unclean == nil ? previous : UUID()
            try db.execute(sql: "PRAGMA synchronous = FULL")
            defer { try? db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
            try db.inTransaction {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('counter_slot_owner', ?), ('stopped_cleanly', '0')",
                    arguments: [owner.uuidString])
                return .commit
            }
            return (owner, unclean)
        }
    }

    /// The size SQLite cuts the write-ahead log file back to after a checkpoint rewound it
    /// (`journal_size_limit`): twice `WALCheckpointPolicy.restartAboveBytes`, so the log of
    /// steady writes keeps its blocks allocated and only a burst's excess is given back.
    static let logSizeLimitBytes = 2 * WALCheckpointPolicy().restartAboveBytes

    private static func open(_ url: URL, synchronous: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        // Other connections (the checkpointer, readers, a store being closed) hold locks for
        // moments: wait for them instead of failing.
        configuration.busyMode = .timeout(2)
        configuration.prepareDatabase { db in
            // Never copy the WAL into the database file when a connection closes: a database
            // found corrupt must be kept exactly as it was, its committed WAL frames with it
            // (WALCheckpointer checkpoints a healthy one while it runs).
            _ = sqlite3_db_config_no_checkpoint_on_close(db.sqliteConnection)
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // A page cache large enough for a few hundred thousand entries, so most writes touch
            // pages already in memory. No memory map: a page fault on a mapped page under
            // writeback holds the process's mmap lock while it waits for the disk, and every
            // thread that then faults (any allocation) waits behind it: 0.5 s stalls of both
            // loops were measured (docs/performance.md, "What was profiled", item 9).
            try db.execute(sql: "PRAGMA cache_size = -65536")
            try db.execute(sql: "PRAGMA mmap_size = 0")
            // Checkpoints run on their own thread (WALCheckpointer), never inside a commit.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            // A burst (an import) grows the log; once a checkpoint has emptied it, SQLite cuts
            // the file back to this rather than keeping the burst's size on disk until the next
            // clean stop. Twice the log a checkpoint rewinds at: at 64 MiB, below those 128 MiB,
            // every rewind cut the file, the commits after it allocated its blocks again, and
            // the p99 at 10,000 saves/s went from 8 to 46-52 ms (found by bisecting 0.25 to 0.32).
            try db.execute(sql: "PRAGMA journal_size_limit = \(Self.logSizeLimitBytes)")
        }
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: configuration)
            // SQLite opens a file it may not write (or whose -wal or -shm it may not) read-only,
            // without an error: the first write (at start, or the first commit of a value
            // received) would fail instead, as "attempt to write a readonly database". Two
            // checks find out now, as neither finds both: the connection's read-only flag (the
            // main file), and a write transaction begun and rolled back (the -wal and -shm
            // files, which a transaction in WAL mode writes before the main file).
            try queue.writeWithoutTransaction { db in
                if sqlite3_db_readonly(db.sqliteConnection, "main") == 1 { throw ReadOnlyStore(path: url.path) }
                try db.execute(sql: "BEGIN IMMEDIATE")
                try db.execute(sql: "ROLLBACK")
            }
            try migrator.migrate(queue)
            return queue
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_READONLY_DIRECTORY {
            throw ReadOnlyStore(path: url.path, inDirectory: true)
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_READONLY {
            throw ReadOnlyStore(path: url.path)  // its log or shared-memory file, found when first written
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: entries and meta") { db in
            try db.execute(sql: """
                CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                CREATE TABLE entries (
                    key TEXT PRIMARY KEY NOT NULL,
                    hlc INTEGER NOT NULL,
                    node TEXT NOT NULL,
                    schema INTEGER NOT NULL DEFAULT 0,
                    bucket INTEGER NOT NULL,
                    payload BLOB
                );
                CREATE INDEX entries_by_bucket ON entries(bucket);
                """)
        }
        migrator.registerMigration("v2: quarantine") { db in
            try db.execute(sql: """
                CREATE TABLE quarantine (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    key TEXT NOT NULL,
                    hlc INTEGER NOT NULL,
                    node TEXT NOT NULL,
                    schema INTEGER NOT NULL,
                    payload BLOB,
                    reason TEXT NOT NULL,
                    at TEXT NOT NULL
                );
                CREATE INDEX quarantine_by_key ON quarantine(key);
                """)
        }
        migrator.registerMigration("v3: entries without rowid") { db in
            // One B-tree ordered by key: a write touches one tree instead of three (rowid table,
            // key index, bucket index), and prefix reads are range scans. Buckets come from the
            // in-memory index, which knows every key's bucket.
            try db.execute(sql: """
                CREATE TABLE entries_v3 (
                    key TEXT PRIMARY KEY NOT NULL,
                    hlc INTEGER NOT NULL,
                    node TEXT NOT NULL,
                    schema INTEGER NOT NULL DEFAULT 0,
                    payload BLOB
                ) WITHOUT ROWID;
                INSERT INTO entries_v3(key, hlc, node, schema, payload) SELECT key, hlc, node, schema, payload FROM entries;
                DROP TABLE entries;
                ALTER TABLE entries_v3 RENAME TO entries;
                """)
        }
        return migrator
    }

    private static func isCorruption(_ error: DatabaseError) -> Bool {
        [ResultCode.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode)
    }

    /// A database file whose first bytes are not SQLite's header is corrupt before SQLite is
    /// asked to open (and perhaps write) it. So is an empty one: a store is never empty once
    /// opened (switching to WAL writes the header before anything else), so an empty file is a
    /// store that lost its content (truncated), or, rarely, a first start killed within the
    /// moment between creating the file and writing it. Either way it is kept aside and listed,
    /// rather than silently started over as a new incarnation.
    private static func checkHeader(_ url: URL) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return }  // a new store
        defer { try? handle.close() }
        let header = try handle.read(upToCount: 16) ?? Data()
        guard !header.isEmpty else {
            throw DatabaseError(
                resultCode: .SQLITE_NOTADB,
                message: "the file is empty (0 bytes): truncated, or a first start stopped before it was written")
        }
        guard header == Data("SQLite format 3\0".utf8) else {
            throw DatabaseError(resultCode: .SQLITE_NOTADB, message: "not an SQLite database (its header is damaged)")
        }
    }

    /// Why the write-ahead log at `path` is damaged, or nil if it is absent, empty, only a
    /// header (32 bytes: no commit can be in it) or has a valid header. One of 1 to 31 bytes is
    /// damage: SQLite reads it as empty, but never leaves one (it truncates its log to nothing,
    /// or writes the whole header), so it was cut, and the commits it held are gone (an outside
    /// tester's log cut to 20 bytes lost 9 acknowledged writes without a word).
    /// The header (sqlite.org/fileformat.html, "WAL File Format") is 32 bytes: a magic
    /// number (0x377f0682 or 0x377f0683, whose low bit says the byte order of its checksums),
    /// the format version 3007000, the page size (a power of two from 512 to 65536), the
    /// checkpoint sequence, two salts, and a checksum of the first 24 bytes. A header whose
    /// checksum holds but whose version is unknown is not damage: a newer SQLite's log, which
    /// SQLite refuses to open (`UnknownLogFormat`), and which must not be moved aside.
    static func logDamage(at path: String) throws -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        // (A read that fails is left to SQLite, which says why when it opens the log.)
        guard let header = try? handle.read(upToCount: 33) else { return nil }
        guard header.count > 32 else {
            return (1..<32).contains(header.count) ? "it is cut short (\(header.count) bytes, less than its 32-byte header)" : nil
        }
        let bytes = [UInt8](header.prefix(32))
        func bigEndian(_ offset: Int) -> UInt32 { Self.bigEndianWord(bytes, at: offset) }
        let magic = bigEndian(0)
        guard magic == 0x377f_0682 || magic == 0x377f_0683 else { return "its header is not a write-ahead log's" }
        guard walHeaderChecksum(bytes) == (bigEndian(24), bigEndian(28)) else { return "its header checksum does not match" }
        guard bigEndian(4) == 3_007_000 else { throw UnknownLogFormat(path: path, version: bigEndian(4)) }
        let pageSize = bigEndian(8)
        guard pageSize >= 512 && pageSize <= 65536 && pageSize & (pageSize - 1) == 0 else { return "invalid page size \(pageSize)" }
        return nil
    }

    /// The checksum of a WAL header's first 24 bytes, as SQLite computes it: pairs of 32-bit
    /// words, read big-endian when the magic number's low bit is set, little-endian otherwise.
    static func walHeaderChecksum(_ header: [UInt8]) -> (UInt32, UInt32) {
        let bigEndianWords = bigEndianWord(header, at: 0) & 1 == 1
        func word(_ offset: Int) -> UInt32 { bigEndianWords ? bigEndianWord(header, at: offset) : bigEndianWord(header, at: offset).byteSwapped }
        var (s0, s1): (UInt32, UInt32) = (0, 0)
        for offset in stride(from: 0, to: 24, by: 8) {
            s0 = s0 &+ word(offset) &+ s1
            s1 = s1 &+ word(offset + 4) &+ s0
        }
        return (s0, s1)
    }

    private static func bigEndianWord(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A write-ahead log with a valid header of a format this SQLite does not know: left alone.
    public struct UnknownLogFormat: Error, CustomStringConvertible, Sendable {
        public var path: String
        public var version: UInt32
        public var description: String {
            "write-ahead log \(path) has format version \(version), which this program's SQLite does not read "
                + "(written by a newer one?): it is left as it is; start the node with the program that wrote it"
        }
    }

    /// The UTC time in a file name kept aside (no colons: `20261123T171500Z`).
    private static func asideStamp() -> String {
        ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
    }

    /// Moves a damaged write-ahead log (see `logDamage`) to `<log>.damaged-<UTC timestamp>`.
    private static func moveAsideIfDamaged(log path: String, database: URL) throws -> DamagedLogMovedAside? {
        let reason: String
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if size > 32, !FileManager.default.fileExists(atPath: database.path) {
            // SQLite would delete a log whose database is gone, with its commits (an operator
            // who removed only the main file, or a move aside interrupted between its renames).
            reason = "its database file \(database.lastPathComponent) is missing, and SQLite would delete the log"
        } else {
            guard let damage = try logDamage(at: path) else { return nil }
            reason = damage
        }
        let target = path + ".damaged-" + asideStamp()
        try FileManager.default.moveItem(atPath: path, toPath: target)
        return DamagedLogMovedAside(originalPath: path, movedTo: target, reason: reason)
    }

    /// Renames the file and its WAL companion to `<name>.corrupt-<UTC timestamp>` and writes the
    /// shared-memory index as it was before the failed open: all three byte for byte.
    private static func moveAside(_ url: URL, shm: Data?, reason: String) throws -> CorruptFileMovedAside {
        let target = url.path + ".corrupt-" + asideStamp()
        let fileManager = FileManager.default
        try fileManager.moveItem(atPath: url.path, toPath: target)
        if fileManager.fileExists(atPath: url.path + "-wal") {
            try fileManager.moveItem(atPath: url.path + "-wal", toPath: target + "-wal")
        }
        if let shm {
            try shm.write(to: URL(fileURLWithPath: target + "-shm"))
            try? fileManager.removeItem(atPath: url.path + "-shm")
        } else if fileManager.fileExists(atPath: url.path + "-shm") {
            try fileManager.moveItem(atPath: url.path + "-shm", toPath: target + "-shm")
        }
        return CorruptFileMovedAside(originalPath: url.path, movedTo: target, reason: reason)
    }

    /// The identity stored in `meta`, or a new one (`created`) for a new store.
    private static func identity(in db: Database, node: NodeID) throws -> (StoreIdentity, created: Bool) {
        let stored = try Dictionary(
            uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT name, value FROM meta").map {
                (($0["name"] as String), ($0["value"] as String))
            })
        if let name = stored["node_id"], let id = NodeID(rawValue: name),
           let text = stored["incarnation"], let incarnation = UUID(uuidString: text) {
            return (StoreIdentity(node: id, incarnation: incarnation), false)
        }
        let identity = StoreIdentity(node: node, incarnation: UUID())
        try db.execute(
            sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('node_id', ?), ('incarnation', ?), ('created_at', ?)",
            arguments: [node.rawValue, identity.incarnation.uuidString, ISO8601DateFormatter().string(from: Date())])
        return (identity, true)
    }

    /// An entry from a row whose first five columns are `key, hlc, node, schema, payload` (every
    /// query here selects them in that order). By position: a lookup by name lower-cases the
    /// name for every column of every row, which showed in the profile of a 100,000-key sync.
    private static func entry(from row: Row) throws -> Entry {
        let nodeName: String = row[2]
        guard let node = NodeID(rawValue: nodeName) else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "invalid node id \(nodeName) in entries")
        }
        let payload: Data? = row[4]
        return Entry(
            key: row[0],
            version: Version(timestamp: HybridTimestamp(rawValue: UInt64(bitPattern: row[1])), node: node),
            schema: UInt16(truncatingIfNeeded: row[3] as Int64),
            payload: payload.map { [UInt8]($0) })
    }

    // MARK: ReplicaStore

    public var count: Int { index.count }
    public var liveCount: Int { index.liveCount }
    public var digest: StoreDigest { index.digest }
    public var highestTimestamp: HybridTimestamp { index.highestTimestamp }

    public func entry(for key: String) throws -> Entry? {
        guard index.contains(key) else { return nil }
        return try Reader(database: database, failures: readFailures).entry(for: key)
    }

    public func keys(prefix: String) throws -> [String] {
        let (where_, arguments) = Self.prefixRange(prefix)
        return try readFailures.watch { try database.read { db in
            try String.fetchAll(db, sql: "SELECT key FROM entries WHERE \(where_) AND payload IS NOT NULL ORDER BY key", arguments: arguments)
        } }
    }

    public func entries(inBuckets buckets: [Int]) throws -> [Entry] {
        try entries(forKeys: index.keys(inBuckets: buckets))
    }

    public func keys(inBuckets buckets: [Int], storedAfter serial: UInt64?, leavingOut held: HeldWrites) -> (keys: [String], leftOut: Int) {
        index.keys(inBuckets: buckets, storedAfter: serial, leavingOut: held)
    }

    public var serial: UInt64 { index.serial }

    public func holdsVersions(by node: NodeID, through timestamp: HybridTimestamp) -> Bool {
        index.holdsVersions(by: node, through: timestamp)
    }

    public var readFailure: StoreReadFailure? { readFailures.current }

    /// One `stat` of the path. While this store holds the file open, its inode cannot be given
    /// to another file, so another inode at the path is another file. Only "no such file" (or
    /// a path component that is no longer a directory) says it is gone: a permission taken
    /// away or a network mount's hiccup is not, and SQLite's open descriptor still works.
    public var fileNoLongerInPlace: String? {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let error = errno
            return error == ENOENT || error == ENOTDIR ? "was deleted or moved away (\(String(cString: strerror(error))))" : nil
        }
        guard let openedFile, openedFile != FileIdentity(info) else { return nil }
        return "was replaced by another file"
    }

    /// A file's device and inode.
    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    public func beginEpoch(atLeast: UInt64) throws -> UInt64 {
        try requireOpenForWriting()
        return try readFailures.watchCommit { try database.write { db in
            let stored = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'last_epoch'").flatMap { UInt64($0) } ?? 0
            let epoch = max(atLeast, stored + 1)
            try db.execute(sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('last_epoch', ?)", arguments: [String(epoch)])
            return epoch
        } }
    }

    /// In `meta` as `member_table`: one message per line, in base64 (a few hundred bytes per
    /// member), replaced whole at each save.
    public func savedMemberTable() throws -> [[UInt8]] {
        let text = try readFailures.watch {
            try database.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'member_table'") }
        }
        // A line that is not base64 comes back empty: the replica counts it as unreadable.
        return (text ?? "").split(separator: "\n").map { Data(base64Encoded: String($0)).map { Array($0) } ?? [] }
    }

    public var diskSpace: DiskSpace? { DiskSpace.of(url.deletingLastPathComponent().path) }

    public func saveMemberTable(_ messages: [[UInt8]]) throws {
        try requireOpenForWriting()
        let text = messages.map { Data($0).base64EncodedString() }.joined(separator: "\n")
        try readFailures.watchCommit { try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('member_table', ?)", arguments: [text])
        } }
    }

    /// In `meta` as `last_contact`, decimal ms (since 0.33.0; a store of an earlier version has
    /// none, and its first contact is saved without judging).
    public func lastContact() throws -> UInt64? {
        try readFailures.watch {
            try database.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'last_contact'") }
        }.flatMap { UInt64($0) }
    }

    public func saveLastContact(_ wallMillis: UInt64) throws {
        try requireOpenForWriting()
        try readFailures.watchCommit { try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('last_contact', ?)", arguments: [String(wallMillis)])
        } }
    }

    public func entries(forKeys keys: [String]) throws -> [Entry] {
        try entries(forKeys: keys, maxBytes: .max).entries
    }

    public func entries(forKeys keys: [String], maxBytes: Int) throws -> (entries: [Entry], unread: [String]) {
        guard !keys.isEmpty else { return ([], []) }
        return try readFailures.watch { try database.read { db in
            var entries: [Entry] = []
            var bytes = 0
            for start in stride(from: 0, to: keys.count, by: 500) {
                let group = Array(keys[start..<min(start + 500, keys.count)])
                let marks = Array(repeating: "?", count: group.count).joined(separator: ",")
                // Row by row, in key order: a group of small values may be followed by large
                // ones, so the budget is checked after each row, not guessed.
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT key, hlc, node, schema, payload FROM entries WHERE key IN (\(marks)) ORDER BY key",
                    arguments: StatementArguments(group))
                let firstOfGroup = entries.count
                while let row = try rows.next() {
                    let entry = try Self.entry(from: row)
                    bytes += entry.key.utf8.count + (entry.payload?.count ?? 0)
                    entries.append(entry)
                    if bytes >= maxBytes {
                        // By bytes: "caf\u{E9}" and "cafe\u{301}" are two keys (`ExactKey`).
                        let read = Set(entries[firstOfGroup...].map { ExactKey($0.key) })
                        return (entries, group.filter { !read.contains(ExactKey($0)) } + keys[(start + group.count)...])
                    }
                }
            }
            return (entries, [])
        } }
    }

    public func entries(prefix: String) throws -> [Entry] {
        try readFailures.watch { try database.read { db in try Self.entries(prefix: prefix, in: db) } }
    }

    static func entries(prefix: String, in db: Database) throws -> [Entry] {
        let (where_, arguments) = prefixRange(prefix)
        return try Row.fetchAll(
            db, sql: "SELECT key, hlc, node, schema, payload FROM entries WHERE \(where_) ORDER BY key", arguments: arguments
        ).map(Self.entry(from:))
    }

    /// A range condition on `key` for keys starting with `prefix`, which the primary key
    /// answers with a seek instead of a scan. (Not LIKE: keys may contain % and _, and LIKE
    /// ignores case.) Keys compare as UTF-8 bytes, and UTF-8 keeps scalar order, so every key
    /// with the prefix lies in [prefix, successor), where successor bumps the last scalar.
    static func prefixRange(_ prefix: String) -> (String, StatementArguments) {
        guard !prefix.isEmpty else { return ("1", []) }
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if (0xD800...0xDFFF).contains(next) { next = 0xE000 }
            if let bumped = Unicode.Scalar(next) {
                var upper = String.UnicodeScalarView()
                upper.append(contentsOf: scalars)
                upper.append(bumped)
                return ("key >= ? AND key < ?", [prefix, String(upper)])
            }
        }
        return ("key >= ?", [prefix])
    }

    public func removeTombstones(before cutoff: HybridTimestamp, limit: Int) throws -> [String] {
        try requireOpenForWriting()
        let keys = Array(index.tombstones(before: cutoff).prefix(limit))
        guard !keys.isEmpty else { return [] }
        try readFailures.watchCommit { try database.write { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM entries WHERE key = ? AND payload IS NULL")
            for key in keys { try statement.execute(arguments: [key]) }
        } }
        for key in keys { index.remove(key) }
        return keys
    }

    public func makeReader() throws -> any StoreReader {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        return Reader(database: try DatabaseQueue(path: url.path, configuration: configuration), failures: readFailures)
    }

    /// A second, read-only connection: WAL lets it read committed data while the owner writes.
    struct Reader: StoreReader {
        let database: DatabaseQueue
        let failures: StoreReadFailures
        func entry(for key: String) throws -> Entry? {
            try failures.watch {
                try database.read { db in
                    try Row.fetchOne(db, sql: "SELECT key, hlc, node, schema, payload FROM entries WHERE key = ?", arguments: [key])
                        .map(SQLiteStore.entry(from:))
                }
            }
        }
        func entries(prefix: String) throws -> [Entry] {
            try failures.watch { try database.read { db in try SQLiteStore.entries(prefix: prefix, in: db) } }
        }
        func liveKeys(_ page: LivePage) throws -> ListedPage<String> {
            try failures.watch { try database.read { db in
                try SQLiteStore.live(page, columns: "key", in: db) { row in
                    let key: String = row[0]
                    return (key, key, key.utf8.count)
                }
            } }
        }
        func liveEntries(_ page: LivePage) throws -> ListedPage<Entry> {
            try failures.watch { try database.read { db in
                try SQLiteStore.live(page, columns: "key, hlc, node, schema, payload", in: db) { row in
                    let entry = try SQLiteStore.entry(from: row)
                    return (entry, entry.key, entry.key.utf8.count + (entry.payload?.count ?? 0))
                }
            } }
        }
    }

    /// One page of live rows read with a cursor: SQLite stops at the page's `limit`, and the
    /// collector at its bytes.
    static func live<Item: Sendable>(
        _ page: LivePage, columns: String, in db: Database, item: (Row) throws -> (Item, key: String, size: Int)
    ) throws -> ListedPage<Item> {
        var (condition, arguments) = prefixRange(page.prefix)
        if let after = page.after {
            condition += " AND key > ?"
            arguments += [after]
        }
        if let excluded = page.excludedPrefix, !excluded.isEmpty {
            let (range, bounds) = prefixRange(excluded)
            condition += " AND NOT (\(range))"
            arguments += bounds
        }
        // One row past the limit: whether the page is the last.
        arguments += [page.limit == .max ? page.limit : page.limit + 1]
        let rows = try Row.fetchCursor(
            db, sql: "SELECT \(columns) FROM entries WHERE \(condition) AND payload IS NOT NULL ORDER BY key LIMIT ?", arguments: arguments)
        var collector = LivePage.Collector<Item>(page)
        var lastKey: String?
        while let row = try rows.next() {
            let (value, key, size) = try item(row)
            lastKey = key
            guard collector.add(value, size: size) else { break }
        }
        let more = try lastKey != nil && rows.next() != nil
        return collector.listed(more: more, lastKey: lastKey)
    }

    public func quarantine(_ entry: Entry, reason: String) throws {
        try requireOpenForWriting()
        try readFailures.watchCommit { try database.write { db in
            let existing = try Int.fetchOne(
                db, sql: "SELECT count(*) FROM quarantine WHERE key = ? AND hlc = ? AND node = ?",
                arguments: [entry.key, Int64(bitPattern: entry.version.timestamp.rawValue), entry.version.node.rawValue]) ?? 0
            guard existing == 0 else { return }  // already kept
            try db.execute(
                sql: "INSERT INTO quarantine(key, hlc, node, schema, payload, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [entry.key, Int64(bitPattern: entry.version.timestamp.rawValue), entry.version.node.rawValue,
                            Int64(entry.schema), entry.payload.map { Data($0) }, reason, ISO8601DateFormatter().string(from: Date())])
        } }
    }

    public func quarantined(key: String) throws -> [QuarantinedEntry] {
        try readFailures.watch { try database.read { db in
            try Row.fetchAll(db, sql: "SELECT key, hlc, node, schema, payload, reason, at FROM quarantine WHERE key = ? ORDER BY id", arguments: [key])
                .map { row in
                    QuarantinedEntry(
                        entry: try Self.entry(from: row), reason: row["reason"],
                        at: ISO8601DateFormatter().date(from: row["at"]) ?? Date(timeIntervalSince1970: 0))
                }
        } }
    }

    public func merge(_ batch: [Entry]) throws -> [Entry] {
        try requireOpenForWriting()
        // Ties read the database directly: the index is being updated while it asks.
        let reader = Reader(database: database, failures: readFailures)
        let applied = try index.apply(batch) { try reader.entry(for: $0) }
        let winners = applied.entries
        guard !winners.isEmpty else { return [] }
        do {
            try readFailures.watchCommit { try write(winners) }
        } catch {
            index.undo(applied)
            throw error
        }
        return winners
    }

    /// Writes merge winners in one transaction.
    private func write(_ winners: [Entry]) throws {
        try database.writeWithoutTransaction { db in
            try Self.inRawTransaction(db) {
                let statement = try db.cachedStatement(sql: """
                    INSERT OR REPLACE INTO entries(key, hlc, node, schema, payload) VALUES (?, ?, ?, ?, ?)
                    """)
                // Bound and stepped through SQLite's C API: this is the group-commit hot path, and
                // GRDB's per-row StatementArguments (boxed values, a Data copy of every payload)
                // cost more than the insert itself.
                let handle = statement.sqliteStatement
                // Clearing the bindings is what makes the static binds below safe: the cached
                // statement outlives the bytes they point at.
                defer { sqlite3_reset(handle); sqlite3_clear_bindings(handle) }
                for entry in winners {
                    sqlite3_reset(handle)
                    var key = entry.key
                    var node = entry.version.node.rawValue
                    // Bound without a copy (SQLITE_STATIC) and stepped while the buffers are in
                    // scope: a transient bind is a malloc and a memcpy per value, three per row.
                    // A bind that fails (out of memory) leaves its parameter NULL: for the
                    // payload, a tombstone stored where the index records a value. Every result
                    // is checked, with one branch in all.
                    let code = key.withUTF8 { key in
                        node.withUTF8 { node in
                            Self.withPayloadBytes(entry.payload) { payload in
                                var bound = sqlite3_bind_text(handle, 1, key.baseAddress, Int32(key.count), sqliteStatic)
                                bound |= sqlite3_bind_int64(handle, 2, Int64(bitPattern: entry.version.timestamp.rawValue))
                                bound |= sqlite3_bind_text(handle, 3, node.baseAddress, Int32(node.count), sqliteStatic)
                                bound |= sqlite3_bind_int64(handle, 4, Int64(entry.schema))
                                if let payload {
                                    // A zero-length blob must not bind as NULL (which means tombstone).
                                    bound |= payload.count == 0
                                        ? sqlite3_bind_zeroblob(handle, 5, 0)
                                        : sqlite3_bind_blob(handle, 5, payload.baseAddress, Int32(payload.count), sqliteStatic)
                                } else {
                                    bound |= sqlite3_bind_null(handle, 5)
                                }
                                // SQLITE_OK is 0: any failed bind leaves a bit set.
                                return bound == SQLITE_OK ? sqlite3_step(handle) : bound
                            }
                        }
                    }
                    guard code == SQLITE_DONE else {
                        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                    }
                }
            }
        }
    }

    /// The payload's bytes (nil for a tombstone), valid inside `body` only.
    private static func withPayloadBytes<Result>(_ payload: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> Result) -> Result {
        guard let payload else { return body(nil) }
        return payload.withUnsafeBytes { body($0) }
    }

    /// BEGIN IMMEDIATE ... COMMIT through SQLite's C API, rolled back if `body` or the commit
    /// fails. GRDB's `write` wraps the same two statements in about 45 us of bookkeeping per
    /// transaction (measured: 90 us against 46 us for the bare pair), which is most of a
    /// one-entry commit on the low-load latency path. Both statements are prepared once (GRDB's
    /// statement cache) instead of compiled on every commit.
    static func inRawTransaction(_ db: Database, _ body: () throws -> Void) throws {
        let connection = db.sqliteConnection
        func run(_ sql: String) throws {
            let statement = try db.cachedStatement(sql: sql).sqliteStatement
            defer { sqlite3_reset(statement) }
            let code = sqlite3_step(statement)
            guard code == SQLITE_DONE else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
            }
        }
        try run("BEGIN IMMEDIATE")
        do {
            try body()
            try run("COMMIT")
        } catch {
            if sqlite3_get_autocommit(connection) == 0 { _ = sqlite3_exec(connection, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }
}
