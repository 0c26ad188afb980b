import CSQLiteConfig
import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside whichever commit crosses the WAL size limit, so
/// one commit in a few thousand stalls the replica's loop for tens of milliseconds (copying
/// pages and fsyncing): that was the p99 latency. Here a second connection checkpoints in small
/// passes, whenever the writer has added a megabyte to the log, or half a second after the last
/// pass once anything was committed (it sleeps until a commit makes a pass due: `WALProgress`):
/// PASSIVE, which never blocks the writer, and a RESTART when the log has grown long, which
/// keeps it bounded under sustained writes (see `WALCheckpointPolicy`).
final class WALCheckpointer: Sendable {
    /// What one pass did.
    struct Pass: Equatable, Sendable {
        /// Frames in the log when the PASSIVE copy ran.
        var logFrames: Int
        /// Whether the pass also rewound the log (false when it did not try, or the writer was
        /// busy past the timeout: the next pass tries again).
        var restarted: Bool
    }

    private final class StopFlag: Sendable {
        let value = Mutex(false)
    }

    private let stopped = StopFlag()
    private let progress: WALProgress
    private final class PassCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Passes the thread has run (for tests: that a pass comes without anyone asking).
    var passes: Int { passCount.value.load(ordering: .relaxed) }
    private let passCount = PassCount()
    /// Signalled when the thread has ended.
    private let ended = DispatchSemaphore(value: 0)
    private let connection: DatabaseQueue
    private let policy: WALCheckpointPolicy
    /// The database's page size, read once: the size of a log frame for the policy.
    private let pageSize: Int

    /// Checkpoints the database at `path` whenever `policy` says, from what the writer's
    /// commits report in `progress`.
    init(path: String, progress: WALProgress, policy: WALCheckpointPolicy = WALCheckpointPolicy()) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        // Like the store's own connection, closing never checkpoints: checkpoints happen in this
        // thread's passes only, never as a side effect of whichever connection closes last.
        configuration.prepareDatabase { db in _ = sqlite3_db_config_no_checkpoint_on_close(db.sqliteConnection) }
        // Everything that can throw runs before the last stored property is set: past that point
        // a throw would run `deinit`, whose `stop()` would wait for a thread never started.
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let pageSize = try connection.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } ?? 4096
        self.connection = connection
        self.policy = policy
        self.pageSize = pageSize
        self.progress = progress
        let stopped = self.stopped
        let ended = self.ended
        let passCount = self.passCount
        // The thread holds the connection and the flags, not the checkpointer: `stop()` (from
        // the store's `deinit` or `closeForWriting`, or this `deinit`) interrupts its wait.
        let thread = Thread {
            // From nothing, not from the progress when the thread gets to run: commits made
            // before then count.
            var last = (progress: WALProgress.Snapshot(), at: ContinuousClock.now)
            while !stopped.value.withLock({ $0 }) {
                let lastPass = last
                @Sendable func due(_ current: WALProgress.Snapshot, at now: ContinuousClock.Instant) -> Bool {
                    policy.passDue(
                        logFrames: current.logFrames, atLastPass: lastPass.progress.logFrames, pageSize: pageSize,
                        commitsSince: current.commits &- lastPass.progress.commits, sinceLastPass: now - lastPass.at)
                }
                let current = progress.snapshot
                guard due(current, at: .now) else {
                    // Asleep until a pass is due: with nothing committed since the last pass,
                    // until the first commit (then the period runs); otherwise until the log has
                    // grown enough (the growing commit wakes us) or the period ends.
                    let quiet = current.commits == lastPass.progress.commits
                    let deadline: DispatchTime = quiet
                        ? .distantFuture
                        : .now() + .nanoseconds(Self.nanoseconds(lastPass.at + policy.period - .now))
                    _ = progress.wait(until: deadline) { snapshot in
                        quiet ? snapshot.commits != lastPass.progress.commits : due(snapshot, at: lastPass.at)
                    }
                    continue
                }
                last = (current, .now)
                // Busy (the writer held the lock past the timeout) or read-only disk: try next time.
                _ = try? Self.checkpoint(connection, policy: policy, pageSize: pageSize)
                passCount.value.add(1, ordering: .relaxed)
            }
            ended.signal()
        }
        thread.name = "wal-checkpoint"
        thread.start()
    }

    /// One pass now, on the checkpointer's connection.
    @discardableResult
    func checkpoint() throws -> Pass { try Self.checkpoint(connection, policy: policy, pageSize: pageSize) }

    /// One pass: a PASSIVE copy, then a RESTART if the log it found is long.
    private static func checkpoint(_ connection: DatabaseQueue, policy: WALCheckpointPolicy, pageSize: Int) throws -> Pass {
        try connection.writeWithoutTransaction { db in
            // Each row is (busy, frames in the log, frames copied); -1s when not in WAL mode.
            let passive = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
            var pass = Pass(logFrames: max(0, passive?[1] ?? 0), restarted: false)
            if policy.restarts(afterPassiveWithLogFrames: pass.logFrames, pageSize: pageSize) {
                let restart = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(RESTART)")
                pass.restarted = (restart?[0] as Int?) == 0
            }
            return pass
        }
    }

    /// Ends the thread and waits for it (at most a pass: its busy timeout is a second), so that
    /// no pass runs once the store has closed and another may open the directory.
    func stop() {
        let wasRunning = stopped.value.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if wasRunning {
            progress.interrupt()
            _ = ended.wait(timeout: .now() + .seconds(3))
        }
    }

    deinit { stop() }

    /// A wait's length in whole nanoseconds, zero if already past.
    private static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
