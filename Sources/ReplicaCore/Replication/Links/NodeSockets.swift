/// The sockets a node listens and dials on (nil once shut down): its XPUB (updates, heartbeats
/// and announcements out; relay subscriptions in), its ROUTER (sync and repair requests), the
/// discovery beacon, a link per member, the seeds it joins through, what the poll loop waits
/// on, and the factory they all come from.
struct NodeSockets {
    /// Where sockets come from: libzmq, or a simulated network.
    let factory: any SocketFactory
    var publisher: (any MessageSocket)?
    var syncServer: (any MessageSocket)?
    var beacon: UDPBeaconSocket?
    var links: [NodeID: MemberLink] = [:]
    /// What the poll loop waits on, rebuilt only when sockets come or go.
    var pollItemsCache: [PollItem<SocketRole>]?
    /// The seeds asked to let this node join, each on a connection of its own.
    var seeding = Seeding()

    init(factory: any SocketFactory) {
        self.factory = factory
    }
}
