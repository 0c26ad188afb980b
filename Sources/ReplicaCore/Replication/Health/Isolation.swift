/// How long this node has heard no member while it has members or seeds to hear, and when that
/// becomes a problem the operator must see (`Problem.Kind.isolated`).
///
/// Until then writes made here stay here. A seed that never answers (a wrong address, a
/// firewall) or members all down looked healthy before: `health` passed, and only `status`'s
/// "joining through" line hinted at it. A node with neither members nor seeds is a cluster of
/// one by design, never isolated.
struct Isolation: Equatable, Sendable {
    /// How long a node may hear no member before it is listed: longer than a member takes to be
    /// declared down, so that a restart of the only other member is not listed.
    let limit: Duration
    private(set) var since: ContinuousClock.Instant?

    init(limit: Duration) {
        self.limit = limit
    }

    /// One tick: how long the node has been alone, once that reaches `limit` (nil before, and
    /// whenever a member is heard or there is nobody to hear).
    mutating func update(anyMemberAlive: Bool, hasMembersOrSeeds: Bool, now: ContinuousClock.Instant) -> Duration? {
        guard !anyMemberAlive, hasMembersOrSeeds else {
            since = nil
            return nil
        }
        let start = since ?? now
        since = start
        return now - start >= limit ? now - start : nil
    }
}
