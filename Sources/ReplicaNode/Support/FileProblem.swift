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

    var description: String { "\(action) \(path): \(reason)" }

    /// The bytes of the input file `path` that a command was given, or of standard input for
    /// `-` (as `set --file` and `import` take them).
    static func readInput(_ path: String) throws(FileProblem) -> Data {
        guard path != "-" else { return FileHandle.standardInput.readDataToEndOfFile() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FileProblem(action: "cannot read", path: path, error: error)
        }
    }
}
