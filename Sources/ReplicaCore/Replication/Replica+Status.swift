import Foundation

extension Replica {
    /// The counters alone: cheap enough to poll.
    public func counterSnapshot() -> ReplicaStatus.Counters { counters }

    /// The digest root alone: equal roots mean equal replicated state.
    public func digestRoot() -> UInt64 { store.digest.root }

    /// A snapshot for `replica-node status`.
    public func status() -> ReplicaStatus {
        let now = ContinuousClock.now
        let root = store.digest.root
        return ReplicaStatus(
            id: identity.node.rawValue,
            incarnation: identity.incarnation.uuidString,
            listen: configuration.listen.description,
            hlc: clock.last.description,
            uptimeSeconds: (now - started) / .seconds(1),
            entryCount: store.count,
            liveEntryCount: store.liveCount,
            digest: String(root, radix: 16),
            security: isCurve ? "curve" : "insecure",
            peers: peers.map { peer in
                ReplicaStatus.Peer(
                    address: peer.endpoint.description,
                    id: peer.node?.rawValue,
                    state: peer.state,
                    lastSeenSecondsAgo: peer.lastHeard.map { (now - $0) / .seconds(1) },
                    lastSequence: peer.lastSequence,
                    inSync: peer.lastDigestRoot == root,
                    sequenceGaps: peer.sequenceGaps,
                    syncsCompleted: peer.syncsCompleted,
                    repairsCompleted: peer.repairsCompleted,
                    syncInProgress: peer.sync != nil)
            },
            refusedHandshakes: refusedHandshakes.values.sorted { $0.last < $1.last },
            counters: counters,
            loadErrors: loadErrors.values.sorted { $0.since < $1.since },
            saveErrors: (Array(saveErrors.values) + refusedSaves.values).sorted { $0.since < $1.since })
    }
}
