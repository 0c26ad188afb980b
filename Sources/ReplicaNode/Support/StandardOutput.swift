import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the client commands print, buffered here and written with `write(2)`, so that a write
/// that failed is known at the end. C stdio (`print`) drops a buffer whose write failed, and a
/// later `fflush` of the empty buffer succeeds: an `export` into a disk that filled for a moment
/// could lose a page and still exit 0. The first failure is kept, and every later
/// write is skipped: what follows a hole is not written.
enum StandardOutput {
    private struct State {
        var buffer: [UInt8] = []
        /// The errno of the first write that failed.
        var failure: Int32?
    }

    private static let state = Mutex(State())
    /// Written out once this much is buffered.
    private static let bufferLimit = 64 << 10

    static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            state.withLock { state in
                state.buffer.append(contentsOf: bytes)
                if state.buffer.count >= bufferLimit { writeOut(&state) }
            }
        }
    }

    /// Writes out what is buffered; the errno of the first failure so far, if any.
    @discardableResult
    static func flush() -> Int32? {
        state.withLock { state in
            writeOut(&state)
            return state.failure
        }
    }

    private static func writeOut(_ state: inout State) {
        defer { state.buffer.removeAll(keepingCapacity: true) }
        guard state.failure == nil else { return }
        state.buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN {
                    // A non-blocking descriptor (shared with a parent that set it so): wait for room.
                    var ready = pollfd(fd: STDOUT_FILENO, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                state.failure = written == 0 ? EIO : error
                return
            }
        }
    }
}
