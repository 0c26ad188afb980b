/// The connections other nodes made to our XPUB and ROUTER, by the CURVE key each proved at its
/// handshake (the user id our ZAP handler gave it), so that revoking a key can end the
/// connections that key already holds: CURVE checks a key only when a connection starts.
///
/// A connection is learnt from what it sends: a SUB's subscriptions (every SUB subscribes as
/// it connects; the XPUB reports every subscriber's, `ZMQ_XPUB_VERBOSE`) and a DEALER's
/// requests. A DEALER that never sent anything has received nothing either; its first request
/// after the revocation is refused (`isRefused`).
struct AcceptedConnections: Sendable, Equatable {
    /// Key (Z85) by connection descriptor. Descriptors are reused; each message re-records its
    /// own, so an entry names the last key seen on that descriptor.
    private(set) var keys: [Int32: String] = [:]

    /// A message arrived on `descriptor`, whose connection proved `key`.
    mutating func heard(on descriptor: Int32, key: String) {
        if keys[descriptor] != key { keys[descriptor] = key }
    }

    /// The connections of keys no longer trusted, to end; they are forgotten.
    mutating func revoke(keeping isTrusted: (String) -> Bool) -> [Int32] {
        let revoked = keys.filter { !isTrusted($0.value) }.map(\.key).sorted()
        for descriptor in revoked { keys[descriptor] = nil }
        return revoked
    }
}
