import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside whichever commit crosses the WAL size limit, so
/// one commit in a few thousand stalls the replica's loop for tens of milliseconds (copying
/// pages and fsyncing): that was the p99 latency. A PASSIVE checkpoint on a second connection
/// never blocks the writer, so the loop's commits stay short.
final class WALCheckpointer: Sendable {
    private final class StopFlag: Sendable {
        let value = Mutex(false)
    }

    private let stopped = StopFlag()

    init(path: String, every interval: Duration = .milliseconds(500)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let stopped = self.stopped
        let thread = Thread {
            while !stopped.value.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: interval / .seconds(1))
                // Busy (the writer holds the lock a moment) or read-only disk: try next time.
                _ = try? connection.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
                }
            }
        }
        thread.name = "wal-checkpoint"
        thread.start()
    }

    func stop() { stopped.value.withLock { $0 = true } }

    deinit { stop() }
}
