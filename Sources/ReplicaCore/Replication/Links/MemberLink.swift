/// The sockets that reach one member: a SUB on its PUB (its updates, heartbeats and
/// announcements, and the relays we ask it for) and a DEALER to its ROUTER (sync, repair and
/// membership requests, and their replies), each watched by a socket monitor.
///
/// One SUB per member is how a receiver knows which member a message came from.
final class MemberLink: @unchecked Sendable {
    let node: NodeID
    let address: Endpoint
    /// The exact strings dialled (with the source address), needed to re-dial.
    let publishAddress: String
    let syncAddress: String
    let subscriber: any MessageSocket
    let dealer: any MessageSocket
    let subscriberEvents: any MessageSocket
    let dealerEvents: any MessageSocket
    /// Sources whose relays this member passes on to us (SUB subscriptions beyond the standing ones).
    var relayedSources: Set<NodeID> = []
    /// Why the member refused our last handshake, until one succeeds (a `handshake` problem).
    var handshakeRefusal: String?

    init(node: NodeID, address: Endpoint, from listen: Endpoint, context: any SocketFactory, limits: WireLimits, security: LinkSecurity) throws {
        self.node = node
        self.address = address
        publishAddress = Endpoint.connecting(to: address.publishAddress, from: listen)
        syncAddress = Endpoint.connecting(to: address.syncAddress, from: listen)
        subscriber = try context.makeSocket(.sub)
        try subscriber.setMaxMessageSize(limits.deliveredFrameBytes)
        // Bounds what a flooding peer can queue here: 10,000 messages of at most maxFrameBytes.
        try subscriber.setHighWaterMarks(send: 1000, receive: 10_000)
        try subscriber.setClusterConnectionOptions(connectTimeout: Replica.connectTimeout, keepaliveIdle: Replica.keepaliveIdle)
        for topic in WireCodec.standingTopics { try subscriber.subscribe(topic) }
        try security.apply(to: subscriber)
        subscriberEvents = try subscriber.monitorConnections([.connected, .handshakeSucceeded, .handshakeFailed, .disconnected])
        try subscriber.connect(publishAddress)
        dealer = try context.makeSocket(.dealer)
        try dealer.setMaxMessageSize(limits.deliveredFrameBytes)
        try dealer.setHighWaterMarks(send: 64, receive: 10_000)
        try dealer.setClusterConnectionOptions(connectTimeout: Replica.connectTimeout, keepaliveIdle: Replica.keepaliveIdle)
        try security.apply(to: dealer)
        dealerEvents = try dealer.monitorConnections([.connected, .handshakeSucceeded, .handshakeFailed, .disconnected])
        try dealer.connect(syncAddress)
    }

    func close() {
        subscriber.close()
        dealer.close()
        subscriberEvents.close()
        dealerEvents.close()
    }
}

/// A seed being asked to let this node join: a DEALER that sends our member table and waits for
/// the seed's (the join reply), after which the seed is a member like any other and this
/// contact closes. Seeds come from `--peer` and from discovery beacons.
final class SeedContact: @unchecked Sendable {
    let id: Int
    let address: Endpoint
    let dealer: any MessageSocket
    let events: any MessageSocket
    var dialer: LinkDialer
    var lastJoinSent: MonotonicInstant?
    /// Why the seed refused our last handshake, until one succeeds (a `handshake` problem).
    var handshakeRefusal: String?
    /// When a discovery beacon named it (nil: a configured seed); see `SeedRetirement`.
    let discoveredAt: MonotonicInstant?

    init(id: Int, address: Endpoint, from listen: Endpoint, context: any SocketFactory, limits: WireLimits, security: LinkSecurity,
         discovered: Bool, now: MonotonicInstant) throws {
        self.id = id
        self.address = address
        discoveredAt = discovered ? now : nil
        dealer = try context.makeSocket(.dealer)
        try dealer.setMaxMessageSize(limits.maxFrameBytes)
        try dealer.setHighWaterMarks(send: 4, receive: 100)
        try dealer.setClusterConnectionOptions(connectTimeout: Replica.connectTimeout, keepaliveIdle: Replica.keepaliveIdle)
        try security.apply(to: dealer)
        events = try dealer.monitorConnections([.connected, .handshakeSucceeded, .handshakeFailed, .disconnected])
        try dealer.connect(Endpoint.connecting(to: address.syncAddress, from: listen))
        dialer = LinkDialer(dialedAt: now)
    }

    var syncAddress: String { address.syncAddress }

    func close() {
        dealer.close()
        events.close()
    }
}

/// How a connecting socket proves itself: nothing (insecure), or CURVE with the server's key.
enum LinkSecurity: Sendable {
    case insecure
    case curve(CurveKeyPair, serverKey: String)

    func apply(to socket: any MessageSocket) throws {
        guard case .curve(let keys, let serverKey) = self else { return }
        try socket.setCurveClient(keys, serverKey: serverKey)
    }
}

/// The replica's name for everything its poll loop waits on: one handler per socket (an
/// implementation detail of `Replica`, public only because `PollLoopOwner` is).
public enum SocketRole: Sendable, Hashable {
    case publisher
    case syncServer
    case authenticator
    case handshakeMonitor(Int)
    case beacon
    case subscriber(NodeID)
    case subscriberEvents(NodeID)
    case dealer(NodeID)
    case dealerEvents(NodeID)
    case seed(Int)
    case seedEvents(Int)
}
