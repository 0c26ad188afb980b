import CZMQ

/// Why a connection's ZMTP handshake failed, as a socket monitor reports it (the event says
/// which kind of failure, its value the detail). Both ends of a connection report their side.
public enum HandshakeFailure: Sendable, Equatable, CustomStringConvertible {
    /// The two ends use different security mechanisms: one CURVE, the other none (NULL).
    /// Both ends learn it from the other's greeting, before anything else is said.
    case mechanismMismatch
    /// The server's authentication handler refused this end (ZAP status 300, 400 or 500; a
    /// Replica node answers 400 to a key it does not trust). Seen by the client.
    case refused(status: Int32)
    /// Another protocol error (a garbled or undecryptable handshake: for CURVE, often a
    /// client that expects another server key); libzmq's `ZMQ_PROTOCOL_ERROR_*` code.
    case protocolError(code: Int32)
    /// Failed before the protocol said why (the connection closed during the greeting); the
    /// value is an errno.
    case noDetail(errno: Int32)

    /// The failure a monitor event describes, or nil if `event` is not a handshake failure.
    init?(event: Int32, value: Int32) {
        switch event {
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
            self = value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? .mechanismMismatch : .protocolError(code: value)
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: self = .refused(status: value)
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: self = .noDetail(errno: value)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .mechanismMismatch: "the two ends use different security (CURVE and none)"
        case .refused(let status): "refused by the server's authentication (status \(status))"
        case .protocolError(let code): "protocol error 0x\(String(UInt32(bitPattern: code), radix: 16))"
        case .noDetail(let errno): "closed during the handshake (errno \(errno))"
        }
    }
}
