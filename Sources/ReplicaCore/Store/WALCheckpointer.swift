import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside whichever commit crosses the WAL size limit, so
/// one commit in a few thousand stalls the replica's loop for tens of milliseconds (copying
/// pages and fsyncing): that was the p99 latency. Here a second connection checkpoints in small
/// passes, whenever the log has grown by a megabyte or half a second has passed: PASSIVE, which
/// never blocks the writer, and a RESTART when the log has grown long, which keeps it bounded
/// under sustained writes (see `WALCheckpointPolicy`).
final class WALCheckpointer: Sendable {
    /// What one pass did.
    struct Pass: Equatable, Sendable {
        /// Frames in the log when the PASSIVE copy ran, and how many it had copied.
        var logFrames: Int
        var copiedFrames: Int
        /// Whether the pass also rewound the log (false when it did not try, or the writer was
        /// busy past the timeout: the next pass tries again).
        var restarted: Bool
    }

    private final class StopFlag: Sendable {
        let value = Mutex(false)
    }

    private let stopped = StopFlag()
    private let connection: DatabaseQueue
    private let policy: WALCheckpointPolicy

    init(path: String, policy: WALCheckpointPolicy = WALCheckpointPolicy()) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.policy = policy
        let stopped = self.stopped
        let walPath = path + "-wal"
        let connection = self.connection
        // The thread holds the connection and the flag, not the checkpointer: `stop()` (from
        // the store's `deinit` or `closeForWriting`, or this `deinit`) ends it within a poll.
        let thread = Thread {
            var last = (bytes: 0, modified: timespec(), at: ContinuousClock.now)
            while !stopped.value.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: policy.pollInterval / .seconds(1))
                var info = stat()
                guard stat(walPath, &info) == 0 else { continue }  // no log yet
                let now = ContinuousClock.now
                let written = info.st_mtim.tv_sec != last.modified.tv_sec || info.st_mtim.tv_nsec != last.modified.tv_nsec
                guard policy.passDue(walFileBytes: Int(info.st_size), atLastPass: last.bytes, sinceLastPass: now - last.at, writtenSince: written)
                else { continue }
                last = (Int(info.st_size), info.st_mtim, now)
                // Busy (the writer held the lock past the timeout) or read-only disk: try next time.
                _ = try? Self.checkpoint(connection, policy: policy)
            }
        }
        thread.name = "wal-checkpoint"
        thread.start()
    }

    /// One pass now, on the checkpointer's connection.
    @discardableResult
    func checkpoint() throws -> Pass { try Self.checkpoint(connection, policy: policy) }

    /// One pass: a PASSIVE copy, then a RESTART if the log it found is long.
    private static func checkpoint(_ connection: DatabaseQueue, policy: WALCheckpointPolicy) throws -> Pass {
        try connection.writeWithoutTransaction { db in
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            // Each row is (busy, frames in the log, frames copied); -1s when not in WAL mode.
            let passive = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
            var pass = Pass(logFrames: max(0, passive?[1] ?? 0), copiedFrames: max(0, passive?[2] ?? 0), restarted: false)
            if policy.restarts(afterPassiveWithLogFrames: pass.logFrames, pageSize: pageSize) {
                let restart = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(RESTART)")
                pass.restarted = (restart?[0] as Int?) == 0
            }
            return pass
        }
    }

    func stop() { stopped.value.withLock { $0 = true } }

    deinit { stop() }
}
