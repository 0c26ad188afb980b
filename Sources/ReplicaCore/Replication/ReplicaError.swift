/// Errors from the replica's public API, each with a message fit for a one-line CLI error.
public enum ReplicaError: Error, Equatable, Sendable, CustomStringConvertible {
    case shutDown
    /// The node is leaving the cluster (`leave`): a write now would reach no member, since
    /// each hangs up on reading the departure, published before it.
    case leaving
    case invalidKey(String)
    case valueTooLarge(size: Int, limit: Int)
    /// The write could not be made durable (read-only or full disk, ...). Nothing was published.
    /// `key` is the entry's key; the message names it in the user's terms (`counter visits`,
    /// not a slot's key).
    case saveFailed(key: String, reason: String)
    /// This node's clock is `offsetMillis` away from its members' median (theirs minus ours),
    /// beyond `limitMillis`: a write stamped now would reorder history, so it is refused.
    case clockSkew(offsetMillis: Int64, limitMillis: Int64)
    /// `ReplicaConfiguration.requireClockCheck`: this node's clock has not been compared with a
    /// member's since it started (none reached), so its writes are refused.
    case clockUnchecked
    /// This node's hybrid clock is `leadMillis` ahead of its members' clocks (its wall clock plus
    /// their median offset), beyond `limitMillis` (what members accept ahead of theirs): it wrote
    /// while its wall clock was ahead (unchecked, or before a restart). A write stamped now would be refused by every member until their
    /// clocks reach it, and then win over the writes made meanwhile, so it is refused here.
    case clockAhead(leadMillis: Int64, limitMillis: Int64)
    /// Another process uses this node's id (members hold its record, at `address`): writes are
    /// refused while it does, since two processes writing as one node overwrite each other's
    /// counter slots.
    /// `evidence` says who hears the other process, and in which life.
    case identityClash(evidence: String)

    /// Whether the same write may succeed later unchanged: the disk, the clock or the identity
    /// clash may clear by themselves. A `Shared` keeps such a change and saves it again
    /// (`KeyReference.setFromKey`); the others (a bad key, a value too large, a replica shut
    /// down or leaving) never will.
    public var isTransient: Bool {
        switch self {
        case .saveFailed, .clockSkew, .clockUnchecked, .clockAhead, .identityClash: true
        case .shutDown, .leaving, .invalidKey, .valueTooLarge: false
        }
    }

    public var description: String {
        switch self {
        case .shutDown: "the replica has shut down"
        case .leaving: "this node is leaving the cluster: writes are refused (members would never receive them)"
        case .invalidKey(let reason): "invalid key: \(reason)"
        case .valueTooLarge(let size, let limit): "value of \(size) bytes exceeds the limit of \(limit) bytes"
        case .saveFailed(let key, let reason): "could not save \(FamilyKey.subject(of: key)): \(reason)"
        case .clockUnchecked:
            "this node's clock has not been compared with any member's since it started (none reached yet), and it "
                + "requires that check: writes are refused until a member is reached"
        case .identityClash(let evidence):
            "another process uses this node's id (\(evidence)): writes are refused until one of "
                + "the two stops, since two processes writing as one node overwrite each other's counters. Give each node "
                + "its own --id and data directory (a copied data directory is the same node)"
        case .clockAhead(let lead, let limit):
            "\(Self.clockAheadPrefix) \(Self.seconds(lead)) ahead of its members' clocks (their median, or this "
                + "node's wall clock while none is measured), beyond the \(Self.seconds(limit)) they accept: it wrote (or stored entries stamped ahead) while its wall "
                + "clock was ahead, or its wall clock went back since, and what it stamps now would be refused by "
                + "every member. Writes are refused until the wall clock catches up (in \(Self.seconds(lead - limit))), or "
                + "wipe this node's data directory and let it rejoin (its writes the members refused are then lost)"
        case .clockSkew(let offset, let limit):
            "this node's clock is \(Self.seconds(-offset)) \(offset < 0 ? "ahead of" : "behind") its members' (median), "
                + "beyond the \(Self.seconds(limit)) limit: writes are refused until the clock is fixed"
        }
    }

    /// How a `clockAhead` message begins.
    static let clockAheadPrefix = "this node's logical clock is"

    private static func seconds(_ millis: Int64) -> String {
        let value = Double(abs(millis)) / 1000
        return value >= 10 ? "\(Int(value.rounded())) s" : "\((value * 10).rounded() / 10) s"
    }
}
