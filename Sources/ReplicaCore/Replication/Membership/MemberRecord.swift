import Foundation

/// What the cluster knows about one member, as gossiped between members.
///
/// A member writes its own active record once per process start (its `epoch`); it is marked
/// `left` (it said so) or `forgotten` (an operator removed it) at the time of the departure. So
/// records merge by (epoch, status): a restarted member's new record replaces every record of
/// its earlier lives, and a departure replaces the active record of the life it ends. A departure
/// is kept for `ReplicaConfiguration.tombstoneRetention` after its epoch, then dropped by every
/// member (`Membership.isExpired`). Liveness (alive, suspect, down) is not part of the record:
/// each node judges it from what it hears.
public struct MemberRecord: Equatable, Hashable, Sendable {
    public enum Status: UInt8, Sendable, Comparable {
        /// Serving at `address`: dial it.
        case active = 1
        /// Announced its departure: stop dialing it, list it as `left`.
        case left = 2
        /// Removed by an operator (`replica-node forget`): stop dialing it, list it no more.
        case forgotten = 3

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var node: NodeID
    /// When this life of the member began (milliseconds since 1970, strictly increasing across
    /// the restarts of one data directory); for a departure, when it was written (if later).
    public var epoch: UInt64
    /// The member's store incarnation (a wiped data directory gets a new one).
    public var incarnation: UUID
    public var status: Status
    /// Where the other members dial it (`serve --advertise`, by default its listen address).
    public var address: Endpoint
    /// Its CURVE public key (32 raw bytes), nil when the cluster runs insecure.
    public var publicKey: [UInt8]?

    public init(node: NodeID, epoch: UInt64, incarnation: UUID, status: Status, address: Endpoint, publicKey: [UInt8]?) {
        self.node = node
        self.epoch = epoch
        self.incarnation = incarnation
        self.status = status
        self.address = address
        self.publicKey = publicKey
    }

    /// Whether `self` replaces `other` (same node). A total order, so that merging records in any
    /// order and any grouping gives the same table: epoch, then status, then (for two different
    /// records of one life, which only a misconfiguration makes) the remaining fields.
    public func supersedes(_ other: MemberRecord) -> Bool {
        if epoch != other.epoch { return epoch > other.epoch }
        if status != other.status { return status > other.status }
        if incarnation != other.incarnation { return incarnation.uuidString < other.incarnation.uuidString }
        if address != other.address { return address.description < other.address.description }
        return (other.publicKey ?? []).lexicographicallyPrecedes(publicKey ?? [])
    }
}
