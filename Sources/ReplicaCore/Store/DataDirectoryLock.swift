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

        public init(directory: String, pid: Int32?) {
            self.directory = directory
            self.pid = pid
        }

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

    public init(directory: URL) throws {
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
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            throw Held(directory: directory.path, pid: Int32(text))
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
        fd = descriptor
    }

    /// Who holds `directory`'s lock, told without taking it or writing anything: the lock file
    /// opened read-only and locked shared for the test. `.free` with no lock file; `.unknown`
    /// when the file cannot be opened (another user's, with no permission) or locked.
    public static func probe(directory: URL) -> Probe {
        let descriptor = open(directory.appendingPathComponent("lock").path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno == ENOENT ? .free : .unknown }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return .free
        }
        guard errno == EWOULDBLOCK else { return .unknown }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        return .held(pid: Int32(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    public enum Probe: Equatable, Sendable {
        case free
        /// Held, by the process that wrote this id (nil if unreadable).
        case held(pid: Int32?)
        case unknown
    }

    /// Before 0.28.0 a holder in this same process was waited for, up to `patience`: a lock
    /// let go of is now free at once (see `deinit`), so there is nothing to wait for.
    @available(*, deprecated, message: "a lock let go of is free at once: use init(directory:)")
    public convenience init(directory: URL, patience: Duration) throws {
        try self.init(directory: directory)
    }

    deinit {
        // Unlocked before the close: a `flock` belongs to the open file, which a child being
        // spawned at this moment (any thread's `posix_spawn`) shares until it runs its program
        // and O_CLOEXEC closes its copy. A close alone left the lock held until then, and a
        // store reopened at once was refused as "this process already has a replica open"
        // (about one suite run in twenty, with tests spawning processes in parallel). An
        // explicit unlock releases it whoever else has the file open.
        flock(fd, LOCK_UN)
        close(fd)
    }
}
