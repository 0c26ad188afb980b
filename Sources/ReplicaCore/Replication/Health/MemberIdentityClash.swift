/// Whether another member's id is used by two processes (`Problem.Kind.memberIdentity`), judged
/// by every other member from that member's moves.
///
/// Two processes with one id (a copied data directory, `--id` given twice) each re-assert their
/// own record over the other's, every round of gossip. The two list it themselves
/// (`IdentityClash`), but every other member saw only a member that moved, and moved back, and
/// listed nothing (helper-70). Here a member whose record comes back to an address it had left,
/// `movesToList` moves within `window`, is listed; it clears once the member has not moved for
/// the window. A member that moves on to new addresses (a container restarted with new IPs)
/// never comes back to an old one, and is not listed.
struct MemberIdentityClash: Sendable {
    let window: Duration
    /// Moves within the window, with a return to an address left, that make it a clash: there
    /// and back twice.
    static let movesToList = 4

    private struct Move: Sendable {
        var at: ContinuousClock.Instant
        var address: Endpoint
    }

    private var moves: [NodeID: [Move]] = [:]
    /// The members listed now.
    private(set) var listed: Set<NodeID> = []

    init(window: Duration) {
        self.window = window
    }

    /// Member `node`'s record moved to `address`. Returns the addresses it moved between when
    /// this move makes it a clash, once (nil while it is listed already, or is no clash).
    mutating func moved(_ node: NodeID, to address: Endpoint, now: ContinuousClock.Instant) -> [Endpoint]? {
        var recent = (moves[node] ?? []).filter { now - $0.at < window }
        recent.append(Move(at: now, address: address))
        moves[node] = recent
        guard !listed.contains(node), recent.count >= Self.movesToList else { return nil }
        // Back to an address it had left: an address seen, then another, then it again.
        let addresses = recent.map(\.address)
        let returned = addresses.indices.contains { index in
            addresses[..<index].contains(addresses[index]) && addresses[index - 1] != addresses[index]
        }
        guard returned else { return nil }
        listed.insert(node)
        var distinct: [Endpoint] = []
        for address in addresses where !distinct.contains(address) { distinct.append(address) }
        return distinct
    }

    /// The listed members that have not moved for the window: no longer a clash.
    mutating func tick(now: ContinuousClock.Instant) -> [NodeID] {
        moves = moves.filter { _, moves in moves.last.map { now - $0.at < window } ?? false }
        let over = listed.filter { moves[$0] == nil }
        listed.subtract(over)
        return over.sorted { $0.rawValue < $1.rawValue }
    }

    /// A member that left or was forgotten: nothing more to judge.
    mutating func forget(_ node: NodeID) {
        moves[node] = nil
        listed.remove(node)
    }
}
