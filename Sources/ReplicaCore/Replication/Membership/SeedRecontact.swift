/// When a node that hears no member asks its seeds again (all members gone, or a partition
/// that outlived every connection): once it has been isolated for `after`, and again every
/// `after` while it stays so.
///
/// A seed still pending (dialled, never answered: a retired host in a shared peer list) does not
/// hold this back: the seeds that did answer once are asked again, and the pending one keeps
/// being re-dialled on its own.
struct SeedRecontact: Equatable, Sendable {
    private(set) var isolatedSince: MonotonicInstant?

    /// One tick of the reactor: true when the seeds are to be contacted now.
    mutating func tick(anyMemberAlive: Bool, hasSeeds: Bool, now: MonotonicInstant, after: Duration) -> Bool {
        guard !anyMemberAlive, hasSeeds else {
            isolatedSince = nil
            return false
        }
        guard let since = isolatedSince else {
            isolatedSince = now
            return false
        }
        guard now - since >= after else { return false }
        isolatedSince = now
        return true
    }
}
