/// Which relays this node takes, decided in the core: for each member it cannot hear directly,
/// a linked member that hears it passes its updates on (`RelayPlanner`). The actor subscribes
/// and unsubscribes as told, and reports back what it subscribed (`relaysTaken`).
extension NodeCore {
    struct Relay: Hashable, Sendable {
        var source: NodeID
        var relay: NodeID
    }

    struct RelayChanges: Equatable, Sendable {
        /// The relay wanted for each source.
        var plan: [NodeID: NodeID]
        /// Relays taken now and not in the plan: unsubscribed.
        var drop: [Relay]
        /// Relays in the plan not taken yet: subscribed.
        var take: [Relay]
    }

    /// What to change in the relays taken, or nil if nothing. `linked`: members this node has
    /// sockets to (only those can relay to it).
    func relayChanges(now: MonotonicInstant, base: PeerTiming, linked: Set<NodeID>) -> RelayChanges? {
        let views = activeSessions.filter { linked.contains($0.node) }.map { session in
            RelayPlanner.View(node: session.node, directlySilent: session.silentDirectly(now: now, base: base), hears: session.hears)
        }
        let plan = RelayPlanner.plan(views, current: relays.taken)
        guard plan != relays.taken else { return nil }
        return RelayChanges(
            plan: plan,
            drop: relays.taken.filter { plan[$0.key] != $0.value }.map { Relay(source: $0.key, relay: $0.value) },
            take: plan.filter { relays.taken[$0.key] != $0.value }.map { Relay(source: $0.key, relay: $0.value) })
    }

    /// The relays of `plan` whose subscriptions are in place (`subscribed`) are the ones taken.
    mutating func relaysTaken(_ plan: [NodeID: NodeID], subscribed: Set<Relay>) {
        relays.taken = plan.filter { subscribed.contains(Relay(source: $0.key, relay: $0.value)) }
    }
}
