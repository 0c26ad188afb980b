import Foundation

/// Relays for partial partitions: when this node cannot hear a member that another member
/// hears, that other member passes the unheard one's updates on (see `RelayPlanner`).
extension Replica {
    /// Subscribes to (and drops) relays as the core's plan changes.
    func planRelays(now: MonotonicInstant) {
        guard let changes = core.relayChanges(now: now, base: timing, linked: Set(sockets.links.keys)) else { return }
        for change in changes.drop {
            if let link = sockets.links[change.relay], link.relayedSources.remove(change.source) != nil {
                try? link.subscriber.unsubscribe(WireCodec.relayTopic(for: change.source))
                logger.info("\(change.source) is heard again (or \(change.relay) no longer hears it): relay through \(change.relay) dropped")
            }
        }
        for change in changes.take {
            guard let link = sockets.links[change.relay] else { continue }
            do {
                try link.subscriber.subscribe(WireCodec.relayTopic(for: change.source))
                link.relayedSources.insert(change.source)
                logger.info("cannot hear \(change.source) directly; taking its updates through \(change.relay)")
            } catch {
                logger.warning("relay subscription for \(change.source) at \(change.relay) failed: \(error)")
            }
        }
        var subscribed = Set<NodeCore.Relay>()
        for (relay, link) in sockets.links {
            for source in link.relayedSources { subscribed.insert(NodeCore.Relay(source: source, relay: relay)) }
        }
        core.relaysTaken(changes.plan, subscribed: subscribed)
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
