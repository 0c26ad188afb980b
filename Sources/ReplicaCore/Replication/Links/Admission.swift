/// Who may connect to this node: the CURVE settings (nil: insecure), the keys trusted and the
/// nodes they belong to, the connections made with each key (ended when it is revoked), the
/// ZAP handler's socket and the handshake monitors, and the connections refused.
struct Admission {
    let curve: CurveSecurity?
    var trustedKeys: Set<[UInt8]>
    var keyOwners: [[UInt8]: NodeID]
    /// Under CURVE: the connections made to our sockets, by key, to end when a key is revoked.
    var acceptedConnections = AcceptedConnections()
    var authenticator: (any MessageSocket)?
    var handshakeMonitors: [HandshakeMonitor] = []
    /// The connections refused, by address and key (the most recent `refusedHandshakeRows`).
    var refusedHandshakes: [String: ReplicaStatus.RefusedHandshake] = [:]

    init(curve: CurveSecurity?) {
        self.curve = curve
        (trustedKeys, keyOwners) = Replica.trust(curve)
    }
}
