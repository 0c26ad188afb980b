import Foundation
import ReplicaCore

/// Where a node's control socket lives: inside its data directory, so only users who can enter
/// that directory (mode 0700) can talk to the node.
enum ControlEndpoint {
    static let socketName = "control.sock"

    /// The largest request a node acts on; a larger one is answered `invalidRequest`.
    static let maxRequestBytes = 4 << 20
    /// The largest frame a node reads at all (ZMQ_MAXMSGSIZE on its socket): libzmq drops a
    /// client that sends more, which then gets no reply. Larger than `maxRequestBytes`, so
    /// that a request somewhat too large is answered with why.
    static let maxDeliveredBytes = 16 * maxRequestBytes

    /// The key and value limits of a node's replica (`serve` configures it with these), which
    /// clients check before sending (`import`, so that no batch is refused half-way).
    static let replicaLimits = WireLimits.standard

    /// The longest path a Unix socket can bind (`sun_path` holds 108 bytes with its NUL).
    static let maxSocketPathBytes = 107

    static func socketPath(in dataDirectory: URL) -> String {
        dataDirectory.standardizedFileURL.appendingPathComponent(socketName).path
    }

    static func address(in dataDirectory: URL) -> String {
        "ipc://" + socketPath(in: dataDirectory)
    }
}
