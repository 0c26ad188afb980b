/// The sockets a node listens and dials on (nil once shut down): its XPUB (updates, heartbeats
/// and announcements out; relay subscriptions in), its ROUTER (sync and repair requests), the
/// discovery beacon, a link per member, and what the poll loop waits on.
struct NodeSockets {
    var publisher: (any MessageSocket)?
    var syncServer: (any MessageSocket)?
    var beacon: UDPBeaconSocket?
    var links: [NodeID: MemberLink] = [:]
    /// What the poll loop waits on, rebuilt only when sockets come or go.
    var pollItemsCache: [PollItem<SocketRole>]?
}
