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
    /// `-` (as `set --file` and `import` take them).
    static func readInput(_ path: String) throws(FileProblem) -> Data {
        guard path != "-" else { return try readStandardInput() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FileProblem(action: "cannot read", path: path, error: error)
        }
    }

    /// Standard input to its end, by `read(2)`: Foundation's `readDataToEndOfFile` crashed the
    /// process (exit 132) on a directory, a closed descriptor or a non-blocking one (helper-71).
    /// A non-blocking input is waited for; any other error is one line.
    static func readStandardInput() throws(FileProblem) -> Data {
        guard !StandardStreams.inputWasClosed else {
            throw FileProblem(action: "cannot read", path: "standard input", reason: "it is closed")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count > 0 {
                data.append(contentsOf: buffer[..<count])
                continue
            }
            if count == 0 { return data }
            let error = errno
            switch error {
            case EINTR: continue
            case EAGAIN:
                var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, -1)
            default:
                throw FileProblem(action: "cannot read", path: "standard input", reason: FileSystemReason.systemMessage(error))
            }
        }
    }
}
