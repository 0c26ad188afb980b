/// Counts a listening socket's failed handshakes (wrong mechanism, refused key, garbage).
public final class HandshakeMonitor: @unchecked Sendable {
    /// The monitor's PAIR socket: poll it with the owner's other sockets.
    public let socket: ZMQSocket

    public init(watching watched: ZMQSocket) throws(ZMQError) {
        socket = try watched.monitor([.handshakeFailed])
    }

    /// The number of failed handshakes reported since the last call (non-blocking).
    public func drainFailures() -> Int {
        var count = 0
        while let event = try? socket.receiveMonitorEvent() {
            if event == .handshakeFailed { count += 1 }
        }
        return count
    }
}
