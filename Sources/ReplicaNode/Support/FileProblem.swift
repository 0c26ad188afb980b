import Foundation
import ReplicaCore

/// A file or directory that could not be read or made, as one line naming the path and the
/// system's reason (`cannot read key file keys/node1.key: no such file or directory`), instead
/// of Foundation's description of the error (`Error Domain=NSCocoaErrorDomain Code=260 ...`).
struct FileProblem: Error, CustomStringConvertible {
    /// What could not be done: "cannot read key file", "cannot create data directory".
    var action: String
    var path: String
    var reason: String

    init(action: String, path: String, error: any Error) {
        self.action = action
        self.path = path
        reason = FileSystemReason.of(error)
    }

    init(action: String, path: String, reason: String) {
        self.action = action
        self.path = path
        self.reason = reason
    }

    var description: String { "\(action) \(path): \(reason)" }

    /// The bytes of the input file `path` that a command was given, or of standard input for
    /// `-` (as `set --file` and `import` take them). Read by `read(2)` to its end, so a FIFO,
    /// `/dev/stdin` or a shell's `<(...)` work as files do: Foundation's `Data(contentsOf:)`
    /// refused them with a false "permission denied".
    static func readInput(_ path: String) throws(FileProblem) -> Data {
        guard path != "-" else { return try readStandardInput() }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FileProblem(action: "cannot read", path: path, reason: FileSystemReason.systemMessage(errno))
        }
        defer { close(descriptor) }
        return try readToEnd(descriptor, naming: path)
    }

    /// Standard input to its end, by `read(2)`: Foundation's `readDataToEndOfFile` crashed the
    /// process (exit 132) on a directory, a closed descriptor or a non-blocking one.
    static func readStandardInput() throws(FileProblem) -> Data {
        guard !StandardStreams.inputWasClosed else {
            throw FileProblem(action: "cannot read", path: "standard input", reason: "it is closed")
        }
        return try readToEnd(STDIN_FILENO, naming: "standard input")
    }

    /// Everything `descriptor` holds until its end. A non-blocking one is waited for; any other
    /// error is one line naming `name`.
    private static func readToEnd(_ descriptor: Int32, naming name: String) throws(FileProblem) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                data.append(contentsOf: buffer[..<count])
                continue
            }
            if count == 0 { return data }
            let error = errno
            switch error {
            case EINTR: continue
            case EAGAIN:
                var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, -1)
            default:
                throw FileProblem(action: "cannot read", path: name, reason: FileSystemReason.systemMessage(error))
            }
        }
    }
}
