/// The connections other nodes made to our XPUB and ROUTER, by the CURVE key each proved at its
/// handshake (the user id our ZAP handler gave it), so that revoking a key can end the
/// connections that key already holds: CURVE checks a key only when a connection starts.
///
/// A connection is learnt from what it sends: a SUB's subscriptions (every SUB subscribes as
/// it connects; the XPUB reports every subscriber's, `ZMQ_XPUB_VERBOSE`) and a DEALER's
/// requests. A DEALER that never sent anything has received nothing either; its first request
/// after the revocation is refused (`endUntrusted`). Descriptors are reused by new
/// connections, so a connection's entry goes when the socket monitor reports it closed.
struct AcceptedConnections: Sendable, Equatable {
    /// Key (Z85) by connection descriptor.
    private(set) var keys: [Int32: String] = [:]
    /// Connections ended here whose close has not been reported yet: ended once, counted once.
    private(set) var ended: Set<Int32> = []

    /// A message arrived on `descriptor`, whose connection proved `key`.
    mutating func heard(on descriptor: Int32, key: String) {
        if keys[descriptor] != key { keys[descriptor] = key }
    }

    /// Whether `descriptor` is known to have proved `key` (the common case: nothing to do).
    func knows(_ descriptor: Int32, as key: String) -> Bool { keys[descriptor] == key }

    /// The connections of keys no longer trusted, to end; they are forgotten.
    mutating func revoke(keeping isTrusted: (String) -> Bool) -> [Int32] {
        let revoked = keys.filter { !isTrusted($0.value) }.map(\.key).sorted()
        for descriptor in revoked {
            keys[descriptor] = nil
            ended.insert(descriptor)
        }
        return revoked
    }

    /// A message came on `descriptor` with a key no longer trusted: true if the connection is
    /// to be ended now, false if it already was (its later queued messages are only dropped).
    mutating func endUntrusted(_ descriptor: Int32) -> Bool {
        keys[descriptor] = nil
        return ended.insert(descriptor).inserted
    }

    /// The connection on `descriptor` closed: a new connection may get that descriptor.
    mutating func closed(_ descriptor: Int32) {
        keys[descriptor] = nil
        ended.remove(descriptor)
    }
}
