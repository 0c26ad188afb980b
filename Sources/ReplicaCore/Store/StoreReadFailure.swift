import Foundation
import GRDB
import Synchronization

/// A read of the store's file that failed in a way that will not pass by itself: SQLite found
/// the file damaged (corrupt, or no longer a database) after it was opened, or the disk returned
/// an I/O error. Start-up reads every row, and moves a damaged file aside before the node
/// serves (`SQLiteStore.CorruptFileMovedAside`); this is damage that happened while it ran.
/// Until a restart, reads of what the file holds fail, and the node cannot serve or sync it.
public struct StoreReadFailure: Sendable, Equatable, CustomStringConvertible {
    /// The store's file.
    public var path: String
    /// SQLite's words for the first failure.
    public var reason: String
    /// The first and the last failure, and how many reads failed.
    public var since: Date
    public var last: Date
    public var count: Int

    public var description: String {
        "the store \(path) is damaged or its disk fails (\(reason)): what it holds cannot be read, served or synced. "
            + "Restart the node: start-up checks every row, keeps a damaged file aside and fetches the data back "
            + "from members (see docs/operations.md, \"A corrupt database\")"
    }

    /// Whether `error` is damage (or a failing disk) rather than contention or a bad request.
    static func isDamage(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [ResultCode.SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_IOERR].contains(error.resultCode)
    }
}

/// Where every connection of one store records damage found by a read. Reads run on any
/// thread (shared keys load through the store's reader), hence the lock.
final class StoreReadFailures: Sendable {
    private let path: String
    private let state = Mutex<StoreReadFailure?>(nil)

    init(path: String) { self.path = path }

    /// The damage recorded so far, if any: it stays until the store is opened again.
    var current: StoreReadFailure? { state.withLock { $0 } }

    /// Runs a read, recording the failure if it was damage; the error is rethrown either way.
    func watch<Result>(_ read: () throws -> Result) throws -> Result {
        do {
            return try read()
        } catch {
            if StoreReadFailure.isDamage(error) { record(error) }
            throw error
        }
    }

    /// Runs a commit, recording the failure if SQLite found the file damaged (it was listed as
    /// a failed commit only, which a full disk also is: retried, never checked). An I/O error
    /// on a commit is not recorded: a quota reached says that too, and passes when space is
    /// freed, which a restart would not help.
    func watchCommit<Result>(_ commit: () throws -> Result) throws -> Result {
        do {
            return try commit()
        } catch {
            if let sqlite = error as? DatabaseError, [ResultCode.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(sqlite.resultCode) {
                record(error)
            }
            throw error
        }
    }

    func record(_ error: any Error, at date: Date = Date()) {
        state.withLock { failure in
            if failure == nil {
                let reason = (error as? DatabaseError).map { "\($0.message ?? "\($0.resultCode)") (SQLite code \($0.extendedResultCode.rawValue))" }
                    ?? "\(error)"
                failure = StoreReadFailure(path: path, reason: reason, since: date, last: date, count: 1)
            } else {
                failure?.last = date
                failure?.count += 1
            }
        }
    }
}
