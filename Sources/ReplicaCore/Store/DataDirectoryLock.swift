import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DATA/lock`, held as long as a store is open on the directory, so two
/// replicas (in this process or another, the library or `replica-node`) never share one data
/// directory: they would write different values under one version and lose increments. The
/// holder writes its PID into the file for the error the next one gets; the kernel releases the
/// lock when the process dies, even by kill -9.
public final class DataDirectoryLock: @unchecked Sendable {
    private let fd: Int32

    /// The directory is held by another open store.
    public struct Held: Error, CustomStringConvertible, Sendable, Equatable {
        public var directory: String
        /// The holder's process id, as it wrote it (nil if unreadable).
        public var pid: Int32?

        public var description: String {
            guard let pid else { return "another process holds the data directory \(directory); one directory serves one replica" }
            if pid == getpid() { return "this process already has a replica open on \(directory); one directory serves one replica" }
            return "process \(pid) holds the data directory \(directory); one directory serves one replica"
        }
    }

    /// The lock file cannot be made or opened (a read-only file system, no permission): the
    /// directory cannot hold a node's data either.
    public struct Unusable: Error, CustomStringConvertible, Equatable, Sendable {
        public var directory: String
        public var reason: String
        public var description: String {
            "cannot use data directory \(directory): cannot create its lock file: \(reason) (a node needs a data directory it can write)"
        }
    }

    /// `patience`: how long a holder in this same process is waited for (see below).
    public init(directory: URL, patience: Duration = DataDirectoryLock.sameProcessPatience) throws {
        // `self.fd` is set only once the lock is held. A class whose stored properties are all
        // set runs its `deinit` even when `init` then throws: setting `fd` before the refusal
        // below closed the descriptor twice, and the second close hit whatever file another
        // thread had opened under the same number meanwhile (an SQLite database, seen as
        // "disk I/O error", SQLITE_IOERR_FSTAT).
        let path = directory.appendingPathComponent("lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Unusable(directory: directory.path, reason: FileSystemReason.systemMessage(errno))
        }
        // A holder in this process may be a store just released and still closing (in about one
        // suite run in twenty, a directory reopened at once was refused as held by this very
        // process): it is given `patience` to let go. Another process's is refused at once.
        let deadline = ContinuousClock.now + patience
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let holder = Int32(text)
            guard holder == getpid(), ContinuousClock.now < deadline else {
                close(descriptor)
                throw Held(directory: directory.path, pid: holder)
            }
            usleep(10_000)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
        fd = descriptor
    }

    deinit { close(fd) }

    /// How long a lock held by this same process is waited for (see `init`).
    public static let sameProcessPatience: Duration = .seconds(2)
}
