/// Reads a socket's failed-handshake events (wrong mechanism, bad key, garbage greeting).
/// Each event is two frames: 2-byte event id + 4-byte value, then the endpoint.
public final class HandshakeMonitor: @unchecked Sendable {
    public let socket: ZMQSocket

    /// Starts monitoring `watched`; read events from `socket` on the same thread.
    public init(watching watched: ZMQSocket, in context: ZMQContext, name: String) throws(ZMQError) {
        let endpoint = "inproc://monitor-\(name)-\(UInt64.random(in: 0...UInt64.max))"
        try watched.monitorHandshakeFailures(endpoint: endpoint)
        socket = try context.socket(.pair)
        try socket.connect(endpoint)
    }

    /// The number of failed handshakes reported since the last call (non-blocking).
    public func drainFailures() -> Int {
        var count = 0
        while let message = try? socket.receive(), message.frames.count == 2 { count += 1 }
        return count
    }
}
