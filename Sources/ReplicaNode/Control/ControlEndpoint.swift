import Foundation

/// Where a node's control socket lives: inside its data directory, so only users who can enter
/// that directory (mode 0700) can talk to the node.
enum ControlEndpoint {
    static let socketName = "control.sock"

    static func socketPath(in dataDirectory: URL) -> String {
        dataDirectory.standardizedFileURL.appendingPathComponent(socketName).path
    }

    static func address(in dataDirectory: URL) -> String {
        "ipc://" + socketPath(in: dataDirectory)
    }
}
