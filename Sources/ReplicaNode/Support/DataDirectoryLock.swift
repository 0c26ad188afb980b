import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DATA/lock`, held for the life of the serving process, so two nodes
/// never share one data directory. The kernel releases it when the process dies, even by kill -9.
final class DataDirectoryLock {
    private let fd: Int32

    struct Held: Error, CustomStringConvertible {
        var directory: String
        var description: String { "another replica-node is already serving \(directory)" }
    }

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("lock").path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: String(cString: strerror(errno))])
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw Held(directory: directory.path)
        }
    }

    deinit { close(fd) }
}
