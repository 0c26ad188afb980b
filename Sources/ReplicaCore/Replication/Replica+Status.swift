import Foundation

extension Replica {
    /// The counters alone: cheap enough to poll.
    public func counterSnapshot() -> ReplicaStatus.Counters { countersNow }

    /// The digest root alone: equal roots mean equal replicated state.
    public func digestRoot() -> UInt64 { store.digest.root }

    /// A snapshot for `replica-node status`. The disk's space is measured on a thread of its
    /// own (`DiskSpace.measure`), neither on the replica's loop nor on Swift's shared pool: a
    /// `statvfs` of a stalled network mount would hold every commit, or every task.
    public nonisolated func status() async -> ReplicaStatus {
        var status = await statusOnLoop()
        if let directory = dataDirectory { status.disk = await DiskSpace.measure(directory.path) }
        return status
    }

    /// `status` without the disk's space, at once (a simulation reads it between turns).
    @_spi(Simulation) public func statusNow() -> ReplicaStatus { statusOnLoop() }

    /// Whether a caller waits on something only time brings: local writes held (for the first
    /// clock comparison, a failing store's back-off) or a departure handing writes over. A
    /// simulation lets its clock run while one does.
    @_spi(Simulation) public var waitsOnTime: Bool {
        !core.commits.writes.isEmpty || core.leaving != nil || !inbox.withLock { $0.writes.isEmpty }
    }

    /// Everything in `status` the replica's state says.
    func statusOnLoop() -> ReplicaStatus {
        let now = instant()
        let root = store.digest.root
        let relays = Dictionary(core.relays.taken.map { ($0.key, $0.value.rawValue) }, uniquingKeysWith: { first, _ in first })
        return ReplicaStatus(
            id: identity.node.rawValue,
            incarnation: identity.incarnation.uuidString,
            counterSlot: counterSlotOwner.uuidString.lowercased(),
            epoch: epoch,
            listen: configuration.listen.description,
            advertise: core.membership.local.address.description,
            membership: core.membership.local.status != .active ? "left" : core.leaving != nil ? "leaving" : "active",
            hlc: core.clock.last.description,
            uptimeSeconds: (now - started) / .seconds(1),
            entryCount: store.count,
            liveEntryCount: store.liveCount,
            digest: ReplicaStatus.digestText(root),
            security: admission.trust.curve != nil ? "curve" : "insecure",
            peers: core.membership.listed.compactMap { record in
                guard let session = core.sessions[record.node] else { return nil }
                return ReplicaStatus.Peer(
                    id: record.node.rawValue,
                    address: record.address.description,
                    state: session.liveness.state,
                    since: Self.since(of: record, judged: session.liveness.sinceDate),
                    lastSeenSecondsAgo: session.liveness.lastHeard.map { (now - $0) / .seconds(1) },
                    relayedBy: relays[record.node],
                    epoch: session.stream.epoch,
                    lastSequence: session.stream.through == 0 ? nil : session.stream.through,
                    // A member that left is in sync with nothing any more, however recent its
                    // last heartbeat.
                    inSync: record.status == .active
                        && session.heartbeat.map { $0.digestRoot == root && now - $0.receivedAt < session.timing(timing).suspectAfter } ?? false,
                    sequenceGaps: session.stream.gaps,
                    syncsCompleted: session.stats.syncsCompleted,
                    repairsCompleted: session.stats.repairsCompleted,
                    syncInProgress: core.planner.inFlight?.peer == record.node,
                    missingUpdates: Int(clamping: session.stream.missingCount.addingSaturated(session.repair.map { OriginStream.length(of: $0.range) } ?? 0)),
                    roundTripMillis: session.clock.smoothedRoundTripMillis,
                    clockOffsetMillis: session.clock.offsetMillis,
                    incarnation: record.incarnation.uuidString,
                    trusted: isAdmitted(record),
                    bytesReceived: .init(published: session.stats.updateBytes, sync: session.stats.syncBytes, repair: session.stats.repairBytes),
                    futureTimestampsRejected: session.stats.futureTimestampsRejected,
                    skewedHeartbeats: session.stats.skewedHeartbeats)
            },
            pendingSeeds: sockets.seeding.seeds.map(\.address.description),
            refusedHandshakes: admission.refusedHandshakes.values.sorted { $0.last < $1.last },
            counters: countersNow,
            clock: clockStatus,
            problems: currentProblems,
            loadErrors: core.healthState.problems.of(.load),
            saveErrors: core.healthState.problems.of(.save))
    }

    /// The counters, with those the machines keep themselves.
    var countersNow: ReplicaStatus.Counters {
        var now = core.counters
        now.memberDialsDeferred = core.unheardDials.deferred
        return now
    }

    /// The data directory, for a store on disk.
    nonisolated var dataDirectory: URL? {
        guard case .directory(let directory) = configuration.storage else { return nil }
        return directory
    }

    /// Since when a member is in its state. A departure carries its time (its epoch, in wall
    /// milliseconds): a member that left before this node restarted was listed as left since
    /// the restart, which also kept its metrics series for the retention after each restart.
    static func since(of record: MemberRecord, judged: Date) -> Date {
        guard record.status != .active, record.epoch >= 1_000_000_000_000 else { return judged }
        return min(judged, Date(timeIntervalSince1970: Double(record.epoch) / 1000))
    }

    /// The node's health: see `ReplicaHealth`.
    public func health() -> ReplicaHealth {
        let current = currentProblems
        let serving = !isShutDown && core.membership.local.status == .active
        return ReplicaHealth(healthy: serving && !current.contains(where: \.failsHealth), serving: serving, problems: current)
    }

    /// Every problem, listed afresh from the state that causes it.
    private var currentProblems: [Problem] {
        listProblems(now: instant())
        return core.healthState.problems.all
    }

    private var clockStatus: ReplicaStatus.Clock {
        let (verdict, median): (String, Int64?) = switch core.clockCheck.verdict {
        case .alone: ("alone", nil)
        case .unverified: ("unverified", nil)
        case .agrees(let median): ("agrees", median)
        case .skewed(let median): ("skewed", median)
        }
        return ReplicaStatus.Clock(verdict: verdict, medianOffsetMillis: median, limitMillis: core.clockCheck.limitMillis)
    }
}
