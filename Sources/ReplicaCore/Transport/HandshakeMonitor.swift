/// Follows a listening socket's accepted connections: counts failed handshakes (wrong
/// mechanism, refused key, garbage), and names the connections that closed, by descriptor.
public final class HandshakeMonitor: @unchecked Sendable {
    /// The monitor's PAIR socket: poll it with the owner's other sockets.
    public let socket: ZMQSocket

    public init(watching watched: ZMQSocket) throws(ZMQError) {
        socket = try watched.monitor([.handshakeFailed, .disconnected])
    }

    /// What happened since the last call (non-blocking).
    public struct Report: Equatable, Sendable {
        public var failedHandshakes = 0
        /// Of those, the ones whose client uses another security mechanism than this socket.
        public var mechanismMismatches = 0
        /// Descriptors of connections that closed (libzmq may give them to new connections).
        public var closed: [Int32] = []
    }

    public func drain() -> Report {
        var report = Report()
        while let notice = try? socket.receiveMonitorNotice() {
            switch notice.event {
            case .handshakeFailed:
                report.failedHandshakes += 1
                if notice.failure == .mechanismMismatch { report.mechanismMismatches += 1 }
            case .disconnected: report.closed.append(notice.value)
            default: break
            }
        }
        return report
    }
}
