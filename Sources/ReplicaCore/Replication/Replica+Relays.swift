import Foundation

/// Relays for partial partitions: when this node cannot hear a member that another member
/// hears, that other member passes the unheard one's updates on (see `RelayPlanner`).
extension Replica {
    /// Subscribes to (and drops) relays as the plan changes.
    func planRelays(now: MonotonicInstant) {
        let views = activeSessions.filter { sockets.links[$0.node] != nil }.map { session in
            RelayPlanner.View(node: session.node, directlySilent: session.silentDirectly(now: now, base: timing), hears: session.hears)
        }
        let plan = RelayPlanner.plan(views, current: core.relays.taken)
        guard plan != core.relays.taken else { return }
        for (source, relay) in core.relays.taken where plan[source] != relay {
            if let link = sockets.links[relay], link.relayedSources.remove(source) != nil {
                try? link.subscriber.unsubscribe(WireCodec.relayTopic(for: source))
                logger.info("\(source) is heard again (or \(relay) no longer hears it): relay through \(relay) dropped")
            }
        }
        for (source, relay) in plan where core.relays.taken[source] != relay {
            guard let link = sockets.links[relay] else { continue }
            do {
                try link.subscriber.subscribe(WireCodec.relayTopic(for: source))
                link.relayedSources.insert(source)
                logger.info("cannot hear \(source) directly; taking its updates through \(relay)")
            } catch {
                logger.warning("relay subscription for \(source) at \(relay) failed: \(error)")
            }
        }
        core.relays.taken = plan.filter { sockets.links[$0.value]?.relayedSources.contains($0.key) == true }
    }

    /// Subscription changes reported by our XPUB: which sources some member wants relayed.
    func receiveSubscriptions() {
        guard let publisher = sockets.publisher else { return }
        for _ in 0..<256 {
            guard let (change, sender) = try? publisher.receiveSubscription() else { return }
            guard admitsConnection(sender) else { continue }
            switch change {
            case .subscribed(let topic):
                // Bounded like the member table: a subscriber cannot grow it with made-up ids.
                if let source = Self.relaySource(of: topic) { core.relays.serve(source, limit: codec.limits.maxMembers) }
            case .unsubscribed(let topic):
                if let source = Self.relaySource(of: topic) { core.relays.stopServing(source) }
            }
        }
    }

    private static func relaySource(of topic: [UInt8]) -> NodeID? {
        guard topic.first == WireCodec.relayTopic, topic.last == 0, topic.count > 2 else { return nil }
        return NodeID(rawValue: String(decoding: topic.dropFirst().dropLast(), as: UTF8.self))
    }

    /// Passes on an update of `source` (received on its own connection) to the members that asked.
    /// An update too large to publish (`Replica.publishesInline`) is not relayed either: the
    /// member fetches it as it fetches any gap in a stream it cannot hear, by a catch-up sync.
    func relay(_ update: Update, epoch: UInt64) {
        guard let publisher = sockets.publisher, core.relays.served.contains(update.origin), codec.publishesInline(update.entry) else { return }
        let relayed = RelayedUpdate(origin: identity.node, source: update.origin, sourceEpoch: epoch, sequence: update.sequence, entry: update.entry)
        if (try? publisher.send([codec.publishFrame(.relay(relayed))])) == true { core.counters.updatesRelayed += 1 }
    }
}
