/// Follows a listening socket's accepted connections: counts failed handshakes (wrong
/// mechanism, refused key, garbage), and names the connections that closed, by descriptor.
///
/// A handshake failed when its connection closed before the handshake succeeded, whatever
/// libzmq reported: a client that sends half a greeting and hangs up, or one that never sends
/// one, gets no failure event of its own.
public final class HandshakeMonitor: @unchecked Sendable {
    /// The monitor's PAIR socket: poll it with the owner's other sockets.
    public let socket: any MessageSocket
    /// Accepted connections whose handshake has not succeeded yet, by descriptor.
    private var handshaking: Set<Int32> = []

    public init(watching watched: any MessageSocket) throws(ZMQError) {
        socket = try watched.monitorConnections([.accepted, .handshakeSucceeded, .handshakeFailed, .disconnected])
    }

    /// What happened since the last call (non-blocking).
    public struct Report: Equatable, Sendable {
        public var failedHandshakes = 0
        /// Failures libzmq said were another security mechanism than this socket's.
        public var mechanismMismatches = 0
        /// Descriptors of connections that closed (libzmq may give them to new connections).
        public var closed: [Int32] = []
    }

    public func drain() -> Report {
        var report = Report()
        while let notice = try? socket.receiveMonitorNotice() {
            switch notice.event {
            case .accepted: handshaking.insert(notice.value)
            case .handshakeSucceeded: handshaking.remove(notice.value)
            case .handshakeFailed:
                if notice.failure == .mechanismMismatch { report.mechanismMismatches += 1 }
            case .disconnected:
                if handshaking.remove(notice.value) != nil { report.failedHandshakes += 1 }
                report.closed.append(notice.value)
            case .connected, .other: break
            }
        }
        return report
    }
}
