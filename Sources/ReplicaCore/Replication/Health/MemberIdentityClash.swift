/// Whether another member's id is used by two processes (`Problem.Kind.memberIdentity`), judged
/// by every other member from that member's moves.
///
/// Two processes with one id (a copied data directory, `--id` given twice) each re-assert their
/// own record over the other's, every round of gossip. The two list it themselves
/// (`IdentityClash`), but every other member saw only a member that moved, and moved back, and
/// listed nothing. Here a member whose record comes back to an address it had left,
/// `movesToList` moves within `window`, is listed; it clears once the member has not moved for
/// the window. A member that moves on to new addresses (a container restarted with new IPs)
/// never comes back to an old one, and is not listed.
///
/// Records that would move a member this node hears directly, not sent by that member, are held
/// back (`Membership`): the member does not move here, but such a record coming again
/// (`contestsToList` within the window) lists it too: another process claims its id, or someone
/// forges its records.
struct MemberIdentityClash: Sendable {
    let window: Duration
    /// Moves within the window, with a return to an address left, that make it a clash: there
    /// and back twice.
    static let movesToList = 4

    private struct Move: Sendable {
        var at: MonotonicInstant
        var address: Endpoint
    }

    private var moves: [NodeID: [Move]] = [:]
    private var contests: [NodeID: [MonotonicInstant]] = [:]
    static let contestsToList = 2
    /// Most events kept per member within the window: enough to judge, bounded whatever a
    /// flood of records does.
    static let eventsKept = 16
    /// The members listed now.
    var listed: Set<NodeID> { Set(listings.keys) }

    /// What shows a listed member's clash, and how often it showed in this stretch.
    struct Listing: Equatable, Sendable {
        enum Evidence: Equatable, Sendable {
            /// It moved back and forth between these addresses.
            case movesBetween([Endpoint])
            /// It is heard at one address while records not its own keep placing it at another.
            case placedElsewhere(heardAt: Endpoint?, placedAt: Endpoint?)
        }

        var evidence: Evidence
        var occurrences: Int
    }

    private(set) var listings: [NodeID: Listing] = [:]

    init(window: Duration) {
        self.window = window
    }

    /// Member `node`'s record moved to `address`. Returns the addresses it moved between when
    /// this move makes it a clash, once (nil while it is listed already, or is no clash).
    mutating func moved(_ node: NodeID, to address: Endpoint, now: MonotonicInstant) -> [Endpoint]? {
        var recent = (moves[node] ?? []).filter { now - $0.at < window }
        recent.append(Move(at: now, address: address))
        if recent.count > Self.eventsKept { recent.removeFirst(recent.count - Self.eventsKept) }
        moves[node] = recent
        if listings[node] != nil {
            // Still moving: one more occurrence, as long as it goes on.
            listings[node]?.occurrences += 1
            return nil
        }
        guard recent.count >= Self.movesToList else { return nil }
        // Back to an address it had left: an address seen, then another, then it again.
        let addresses = recent.map(\.address)
        let returned = addresses.indices.contains { index in
            addresses[..<index].contains(addresses[index]) && addresses[index - 1] != addresses[index]
        }
        guard returned else { return nil }
        var distinct: [Endpoint] = []
        for address in addresses where !distinct.contains(address) { distinct.append(address) }
        listings[node] = Listing(evidence: .movesBetween(distinct), occurrences: 1)
        return distinct
    }

    /// A record that would move member `node` (heard directly, at `heardAt`) to `placedAt` was
    /// held back. Returns true while the member is listed (this contest listed it, or it was
    /// already).
    mutating func contested(_ node: NodeID, heardAt: Endpoint? = nil, placedAt: Endpoint? = nil, now: MonotonicInstant) -> Bool {
        var recent = (contests[node] ?? []).filter { now - $0 < window }
        recent.append(now)
        if recent.count > Self.eventsKept { recent.removeFirst(recent.count - Self.eventsKept) }
        contests[node] = recent
        guard listings[node] != nil || recent.count >= Self.contestsToList else { return false }
        var listing = listings[node] ?? Listing(evidence: .placedElsewhere(heardAt: heardAt, placedAt: placedAt), occurrences: 0)
        if let placedAt { listing.evidence = .placedElsewhere(heardAt: heardAt, placedAt: placedAt) }
        listing.occurrences += 1
        listings[node] = listing
        return true
    }

    /// The `memberIdentity` problems, by member.
    var problems: [String: ProblemFact] {
        var problems: [String: ProblemFact] = [:]
        for (node, listing) in listings {
            let message = switch listing.evidence {
            case .movesBetween(let addresses):
                "member \(node) keeps moving back and forth between \(addresses.map(\.description).joined(separator: " and ")) "
                    + "(\(Self.movesToList) moves within \(window)): two processes seem to use the id \(node) "
                    + "(a copied data directory, or --id given twice), and they overwrite each other's counter slots. Stop one; "
                    + "each node needs its own --id and data directory"
            case .placedElsewhere(let heardAt, let placedAt):
                "member \(node) is heard at \(heardAt?.description ?? "its address") while records keep placing it at \(placedAt?.description ?? "another address") "
                    + "(not sent by \(node) itself): another process uses the id \(node) (a copied data "
                    + "directory, or --id given twice), or someone sends forged member records. The records are held back while "
                    + "\(node) is heard where it is"
            }
            problems[node.rawValue] = ProblemFact(message, occurrences: listing.occurrences)
        }
        return problems
    }

    /// The listed members that have neither moved nor been contested for the window: no
    /// longer a clash.
    mutating func tick(now: MonotonicInstant) -> [NodeID] {
        moves = moves.filter { _, moves in moves.last.map { now - $0.at < window } ?? false }
        contests = contests.filter { _, times in times.last.map { now - $0 < window } ?? false }
        let over = listings.keys.filter { moves[$0] == nil && contests[$0] == nil }
        for node in over { listings[node] = nil }
        return over.sorted { $0.rawValue < $1.rawValue }
    }

    /// A member that left or was forgotten: nothing more to judge.
    mutating func forget(_ node: NodeID) {
        moves[node] = nil
        contests[node] = nil
        listings[node] = nil
    }
}
