/// How long this node has heard no member while it has members or seeds to hear, or has been
/// heard by none while it hears them, and when that becomes a problem the operator must see
/// (`Problem.Kind.isolated`).
///
/// Until then writes made here stay here. A seed that never answers (a wrong address, a
/// firewall) or members all down looked healthy before: `health` passed, and only `status`'s
/// "joining through" line hinted at it. A node with neither members nor seeds is a cluster of
/// one by design, never isolated.
struct Isolation: Equatable, Sendable {
    /// How long a node may hear no member before it is listed: longer than a member takes to be
    /// declared down, so that a restart of the only other member is not listed.
    let limit: Duration
    private(set) var since: MonotonicInstant?

    init(limit: Duration) {
        self.limit = limit
    }

    /// One tick: how long the node has been alone, once that reaches `limit` (nil before, and
    /// whenever a member is heard or there is nobody to hear).
    mutating func update(anyMemberAlive: Bool, hasMembersOrSeeds: Bool, now: MonotonicInstant) -> Duration? {
        let alone = Self.held(!anyMemberAlive && hasMembersOrSeeds, since: &since, limit: limit, now: now)
        condition = alone.map { .alone(for: $0) }
        return alone
    }

    /// How this node is isolated at the last judgement, if it is.
    enum Condition: Equatable, Sendable {
        /// No member heard for that long.
        case alone(for: Duration)
        /// Members heard, none hearing this node, for that long.
        case unheard(for: Duration)
    }

    private(set) var condition: Condition?

    /// Since when members are heard but none hears this node.
    private(set) var unheardSince: MonotonicInstant?

    /// One tick: how long members have been heard here while none reports hearing this node
    /// (its key is not trusted there, or the link works one way only), once that reaches
    /// `limit`. Writes made here then reach no one either, although every member looks alive.
    mutating func unheard(anyMemberAlive: Bool, anyMemberHearsUs: Bool, now: MonotonicInstant) -> Duration? {
        let unheard = Self.held(anyMemberAlive && !anyMemberHearsUs, since: &unheardSince, limit: limit, now: now)
        if condition == nil { condition = unheard.map { .unheard(for: $0) } }
        return unheard
    }

    /// How long `condition` has held, once that reaches `limit`; it starts over when it breaks.
    private static func held(_ condition: Bool, since: inout MonotonicInstant?, limit: Duration, now: MonotonicInstant) -> Duration? {
        guard condition else {
            since = nil
            return nil
        }
        let start = since ?? now
        since = start
        return now - start >= limit ? now - start : nil
    }
}
