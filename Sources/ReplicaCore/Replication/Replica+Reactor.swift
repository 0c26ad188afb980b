import Foundation

/// The loop body: dispatch readiness by socket role, commit what arrived with the queued local
/// writes, then run the timers.
extension Replica {
    public var pollItems: [PollItem<SocketRole>] {
        guard !isShutDown, let syncServer = sockets.syncServer, let publisher = sockets.publisher else { return [] }
        if let cached = sockets.pollItemsCache { return cached }
        var items = [PollItem(syncServer, role: SocketRole.syncServer), PollItem(publisher, role: .publisher)]
        if let authenticator = admission.authenticator { items.append(PollItem(authenticator, role: .authenticator)) }
        for (index, monitor) in admission.handshakeMonitors.enumerated() { items.append(PollItem(monitor.socket, role: .handshakeMonitor(index))) }
        if let beacon = sockets.beacon { items.append(PollItem(fileDescriptor: beacon.fileDescriptor, role: .beacon)) }
        for link in sockets.links.values {
            items.append(PollItem(link.subscriber, role: .subscriber(link.node)))
            items.append(PollItem(link.dealer, role: .dealer(link.node)))
            items.append(PollItem(link.subscriberEvents, role: .subscriberEvents(link.node)))
            items.append(PollItem(link.dealerEvents, role: .dealerEvents(link.node)))
        }
        for seed in sockets.seeding.seeds {
            items.append(PollItem(seed.dealer, role: .seed(seed.id)))
            items.append(PollItem(seed.events, role: .seedEvents(seed.id)))
        }
        sockets.pollItemsCache = items
        return items
    }

    public var pollTimeout: Duration? {
        guard !isShutDown else { return nil }
        let now = instant()
        let writesReady = !core.commits.writes.isEmpty && !core.clockCheck.holdsWrites(now: now)
        if !core.commits.inbound.isEmpty || writesReady || core.responder.hasReplyReady(now: now) { return .zero }
        // Wake at least every 100 ms to age peer states and start syncs, when a reply waiting
        // for its requester's queue is offered again, and for housekeeping a busy turn skipped.
        var wake = min(max(.zero, core.duties[.heartbeat] - now), .milliseconds(100))
        if let owed = core.housekeeping.wake(now: now) { wake = min(wake, owed) }
        return core.responder.nextRetry.map { min(wake, max(.zero, $0 - now)) } ?? wake
    }

    public func pollDidReturn(ready: [SocketRole]) {
        guard !isShutDown else { return }
        noticeStall()
        noticeClockStep()
        var intakeFull = false
        // One turn's intake from members is bounded in messages and in time, so that a node
        // reading a backlog (after a pause, a partition) still commits, heartbeats and serves
        // several times a second, in a debug build too.
        var intake = IntakeBudget(messages: configuration.maxBatch, deadline: instant() + Self.intakePerTurn, now: instant)
        // Each member's backlog gets its share of the turn: one that is read first every turn
        // must not starve another (which would then look silent, and be re-dialled).
        let subscribers = ready.filter { if case .subscriber = $0 { true } else { false } }.count
        intake.share = max(256, configuration.maxBatch / max(1, subscribers))
        for role in ready {
            // A departure that completes in this turn shuts the node down: its sockets are closed.
            if isShutDown { return }
            switch role {
            case .syncServer: receiveRequests()
            case .publisher: receiveSubscriptions()
            case .authenticator, .handshakeMonitor: serviceAuthentication()
            case .beacon: receiveBeacons()
            case .subscriber(let node): intakeFull = receivePublished(from: node, budget: &intake) || intakeFull
            case .dealer(let node): receiveReplies(from: node)
            case .subscriberEvents(let node): receiveLinkEvents(of: node, subscriber: true)
            case .dealerEvents(let node): receiveLinkEvents(of: node, subscriber: false)
            case .seed(let id): receiveSeedReplies(from: id)
            case .seedEvents(let id): receiveSeedEvents(of: id)
            }
        }
        let now = instant()
        if intakeFull {
            core.intakeBusySince = core.intakeBusySince ?? now
        } else {
            core.intakeBusySince = nil
        }
        guard !isShutDown else { return }
        continueReplies()
        flush()
        runTimers(now: now)
    }

    /// The most time one turn spends reading members' messages before it commits them.
    static let intakePerTurn: Duration = .milliseconds(100)

    /// A wake-up long after the last one means this node was stalled (SIGSTOP, a frozen VM, a
    /// starved CPU): its members' silence in that time is not theirs. Their evidence is moved
    /// forward, so they are not declared down and re-dialled, dropping what their connections
    /// queued for us meanwhile.
    private func noticeStall() {
        let now = instant()
        let gap = core.duties.turned(now: now)
        guard gap > timing.suspectAfter else { return }
        core.duties.stalled(for: gap)
        core.lastStallEnded = now
        warn("stalled", "this node was stalled for \(gap); not counting that against its members")
        let wall = configuration.wallClock()
        for node in core.sessions.keys { core.sessions[node]?.stalled(for: gap, now: now, wallMillis: wall) }
    }

    /// The sessions of active members, by id: what the timers, syncs, relays, the clock check
    /// and isolation look at. Members that left keep a session for `status` only, and a cluster
    /// that has seen thousands of them must not pay for them every turn.
    var activeSessions: [PeerSession] { core.activeSessions }

    func runTimers(now: MonotonicInstant) {
        if !sockets.seeding.contacted {
            sockets.seeding.contacted = true
            restoreMemberTable()
            contactSeeds()
        }
        if let expiry = core.membership.nextExpiry, let wall = expiryWallMillis(received: false), wall >= expiry {
            expireDepartures(wallMillis: wall)
        }
        saveMemberTable(now: now)
        for duty in core.duties.due(now: now) {
            switch duty {
            case .heartbeat:
                publishHeartbeat(now: now)
                // Judged on what heartbeats tell, over minutes: once an interval is enough.
                note(.divergence, core.listDivergences(now: now, configuration: configuration))
                if core.commits.shortOfSpace != nil { checkDiskSpace() }
            case .beacon:
                sendBeacon()
            case .periodicSync:
                // The backstop for differences nothing else saw. Not with a member whose digest is
                // ours, and not while losses are known (repairs and catch-ups bring those, and a
                // sync now would fetch the same updates again).
                let root = store.digest.root
                // (Losses in the stream of a member that left are no longer repaired: they do not count.)
                let active = activeSessions
                let catchingUp = core.planner.holdsRepairs || active.contains { !$0.stream.missing.isEmpty || $0.repair != nil }
                for session in active where session.liveness.state == .alive && session.heartbeat?.digestRoot != root && !catchingUp {
                    core.planner.want(.periodic, with: session.node)
                }
            case .tombstoneSweep:
                collectTombstones()  // sooner again if it left some
            case .storeFileCheck:
                checkStoreFileInPlace()
                if core.commits.shortOfSpace == nil { checkDiskSpace() }
            }
        }
        if !core.storeReadFailureLogged, let failure = store.readFailure {
            // Listed by `status` from the store itself; said once in the log, when first seen.
            core.storeReadFailureLogged = true
            logger.error("store read failed", metadata: ["path": "\(failure.path)", "error": "\(failure.reason)"])
        }
        if core.commits.refetchDue(now: now) {
            // The back-off after a failed commit passed: fetch again what was dropped meanwhile.
            core.planner.wantCatchUp(.commitFailed)
        }
        if core.housekeeping.runs(now: now) { keepHouse(now: now) }
    }

    /// What every turn used to do, now at most once per `HousekeepingSchedule.interval`: the
    /// members' timers, then what is judged from their states (clocks, identity, relays), syncs,
    /// seeds and a departure's deadline. The timers come first, so that a member found down in
    /// this run is judged down in it too (its clock no longer listed, say), with no moment
    /// between the two for a `status` to see.
    func keepHouse(now: MonotonicInstant) {
        // Only active members have timers (`PeerSession.tick`); those that left keep a session
        // for `status`, and there may be thousands of them.
        // (Read before the session's tick: an optional-chained call holds `core` from the start.)
        let holdRepairs = core.planner.holdsRepairs
        for node in core.membership.active.map(\.node) {
            guard let actions = core.sessions[node]?.tick(now: now, base: timing, holdRepairs: holdRepairs) else { continue }
            perform(actions, for: node, now: now)
        }
        checkClock(now: now)
        retakeForgottenStamps()
        noteContact()
        judgeIdentityClash(now: now)
        releaseHeldRecords(now: now)
        maintainUnheardDials(now: now)
        planRelays(now: now)
        if let expired = core.planner.expire(now: now, timeout: timing.requestTimeout) {
            let patience = core.planner.timeout(for: expired.peer, base: timing.requestTimeout)
            logger.warning("sync with \(expired.peer) timed out after \(expired.chunks) chunks; will retry, waiting up to \(patience) for a chunk")
        }
        startNextSync(now: now)
        maintainSeeds(now: now)
        checkLeaveDeadline(now: now)
        listProblems(now: now)
    }

    /// Carries out what a member's session decided.
    func perform(_ actions: [PeerSession.Action], for node: NodeID, now: MonotonicInstant) {
        for action in actions {
            switch action {
            case .stateChanged(let transition):
                stateChanged(node, transition)
            case .wantSync(let reason):
                core.planner.want(reason, with: node)
            case .exchangeMembers:
                sendMembers(to: node, wantsReply: true)
            case .requestRepair(let range):
                requestRepair(range, from: node, now: now)
            case .redialSubscriber:
                guard let link = sockets.links[node] else { continue }
                redial(link.subscriber, link.publishAddress, of: node)
                core.sessions[node]?.subscriberRedialed(now: now)
            case .redialDealer:
                guard let link = sockets.links[node] else { continue }
                redial(link.dealer, link.syncAddress, of: node)
                if let follow = core.sessions[node]?.dealerRedialed(now: now) { perform(follow, for: node, now: now) }
            case .syncConnectionLost:
                if let lost = core.planner.connectionLost(to: node) {
                    logger.info("sync with \(node) interrupted after \(lost.chunks) chunks; will resume")
                }
            }
        }
    }

    private func stateChanged(_ node: NodeID, _ transition: Liveness.Transition) {
        let address = core.sessions[node]?.record.address.description ?? "?"
        logger.info("member \(node) (\(address)) is \(transition.to.rawValue) (was \(transition.from.rawValue))")
    }

    func redial(_ socket: any MessageSocket, _ address: String, of node: NodeID) {
        do {
            if let session = core.sessions[node], session.dialRoundTrip != nil {
                try socket.setConnectTimeout(session.dialTiming(timing).connectAttempt)
            }
            try socket.redial(address)
        } catch {
            logger.warning("re-dialling \(node) failed: \(error)")
        }
    }
}

extension Replica {
    /// The data directory deleted (or the database file replaced) under a running node: SQLite
    /// goes on committing to the file it holds open, which no path leads to any more, and all
    /// of it is gone when the node stops. A `store` problem (health fails) until a restart, or
    /// until the file is moved back (the same file, so nothing was lost); checked every 2 s (one
    /// `stat`).
    func checkStoreFileInPlace() {
        guard let path = dataDirectory?.appendingPathComponent(SQLiteStore.fileName).path else { return }
        guard let why = store.fileNoLongerInPlace else {
            core.healthState.misplacedStoreFile = nil
            return
        }
        guard core.healthState.misplacedStoreFile == nil else { return }
        core.healthState.misplacedStoreFile = (path, "the database file \(path) \(why) while the node ran: what it commits now goes to a file no path "
            + "leads to, lost when the node stops. Keep it running until every member is up and in sync with it (their "
            + "`peers` show it alive and in sync: what only it held has reached them), then stop it and start it again: it "
            + "starts over from its members. (Its control socket may have gone with the directory: then its clients cannot "
            + "reach it, and the members' `peers`, this log and --metrics are what show it.)")
    }
}
