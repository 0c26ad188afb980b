import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Standard input, output and error as the process was started with them. A process started
/// with one of them closed would hand its number to the next file anything opens (Dispatch's
/// pipes, libzmq's sockets): `set --file -` then read another thread's non-blocking pipe as
/// its input and waited on it for ever (one start in seven with `<&-`), and output
/// could have gone into a socket. So each closed one is held by `/dev/null` from the start,
/// and a command that reads standard input says it was closed.
enum StandardStreams {
    /// Whether standard input was closed at start (its slot is now `/dev/null`). Read first
    /// thing in `main`, before any other thread runs.
    static let inputWasClosed: Bool = {
        let closed = (0...2).map { fcntl(Int32($0), F_GETFD) == -1 && errno == EBADF }
        for descriptor in 0...2 where closed[descriptor] {
            // open() takes the lowest free number: this very slot (the lower ones are open).
            // Standard output is held read-only, so that what a command prints fails to be
            // written (EBADF) and it exits 1, as into a closed pipe: `get >&-` printed into
            // /dev/null and exited 0. Standard error stays writable: a message
            // nobody reads must not turn success into failure.
            _ = open("/dev/null", descriptor == 2 ? O_WRONLY : O_RDONLY)
        }
        return closed[0]
    }()
}
