/// Who may connect to this node: the CURVE settings and keys trusted (`KeyTrust`), the connections made with each key (ended when it is revoked), the
/// ZAP handler's socket and the handshake monitors, and the connections refused.
struct Admission {
    var trust: KeyTrust
    /// Under CURVE: the connections made to our sockets, by key, to end when a key is revoked.
    var acceptedConnections = AcceptedConnections()
    var authenticator: (any MessageSocket)?
    var handshakeMonitors: [HandshakeMonitor] = []
    /// The connections refused, by address and key (the most recent `refusedHandshakeRows`).
    var refusedHandshakes: [String: ReplicaStatus.RefusedHandshake] = [:]

    init(curve: CurveSecurity?) {
        trust = KeyTrust(curve: curve)
    }
}
