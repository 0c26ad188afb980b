import Foundation

/// Membership: merging gossip, dialling who joined, hanging up on who left, `leave`, `forget`,
/// trust changes and discovery beacons.
extension Replica {
    /// Merges member records (a join reply, an exchange, an announcement) and acts on what
    /// changed. `sender` is the member they provably come from: the owner of the connection
    /// they arrived on, or of the CURVE key that delivered them; nil when nothing proves it.
    func mergeMembers(_ records: [MemberRecord], from source: NodeID, sender: NodeID?) {
        let now = instant()
        let result = core.membership.merge(records, wallMillis: configuration.wallClock(), expiryWallMillis: expiryWallMillis(received: true),
                                      keyOwners: admission.trust.keyOwners, sender: sender, heardDirectly: heardDirectly(now: now))
        act(on: result, from: source.rawValue, now: now)
    }

    /// Takes the records held back against members that have fallen silent since (`Membership.releaseHeld`).
    func releaseHeldRecords(now: MonotonicInstant) {
        guard let result = core.membership.releaseHeld(heardDirectly: heardDirectly(now: now), wallMillis: configuration.wallClock(),
                                                  expiryWallMillis: expiryWallMillis(received: true), keyOwners: admission.trust.keyOwners)
        else { return }
        act(on: result, from: "records held while their members were heard", now: now)
    }

    private func act(on result: Membership.MergeResult, from source: String, now: MonotonicInstant) {
        for impersonation in result.impersonations { noteImpersonation(impersonation, from: source, now: now) }
        if !result.refused.isEmpty { noteRefused(result.refused, from: source) }
        for record in result.held { noteHeld(record, from: source, now: now) }
        if result.reasserted {
            logger.warning("\(source) holds a record of this node that would replace ours (a forget, a stale leave, or another process with id \(identity.node)); re-asserting with epoch \(core.membership.local.epoch)")
        }
        for change in result.changes { apply(change, now: now) }
        if !result.announce.isEmpty { announce(result.announce) }
    }

    /// Members heard on their own connections now: records that end or move them are taken
    /// from them alone.
    func heardDirectly(now: MonotonicInstant) -> Set<NodeID> {
        Set(activeSessions.lazy.filter { $0.hearsDirectly(now: now, base: self.timing) }.map(\.node))
    }

    /// Records `merge` did not take: counted, and logged (once per reason a while).
    private func noteRefused(_ refusals: [Membership.Refusal], from source: String) {
        core.counters.memberRecordsRefused += refusals.count
        for refusal in refusals {
            let record = refusal.record
            warn("member record \(refusal.reason)", "refused a member record of \(record.node) (\(record.status), at \(record.address), epoch \(record.epoch)) "
                + "from \(source): \(refusal.reason.rawValue)")
        }
    }

    /// A record held back against a member heard directly. A departure is usually the member's
    /// own word arriving by another way first (on ROUTER, before its announcement on PUB); an
    /// active record placing it elsewhere that keeps coming lists the member
    /// (`MemberIdentityClash`). Held records never taken are counted when dropped.
    private func noteHeld(_ record: MemberRecord, from source: String, now: MonotonicInstant) {
        logger.debug("held back a member record of \(record.node) (\(record.status), at \(record.address)) from \(source): \(record.node) is heard directly")
        guard record.status == .active else { return }
        _ = core.healthState.memberClash.contested(record.node, heardAt: core.membership[record.node]?.address, placedAt: record.address, now: now)
    }

    /// A member's heartbeat reported this node: heard directly in another life is evidence of a
    /// second process with our id (`IdentityClash`).
    func judgeReport(ofUs report: PeerReport, by member: NodeID, now: MonotonicInstant) {
        guard core.healthState.identityClash.reported(epoch: report.epoch, hearsDirectly: report.hearsDirectly, by: member, ourEpoch: epoch, now: now),
              core.healthState.identityClash.rival != nil
        else { return }
        // Listed (health fails) and local writes refused until it stops: `identityClash.rival`.
        doubt(identity.node)
    }

    /// What shows another process with our id, in an operator's words.
    static func clashEvidence(_ rival: IdentityClash.Evidence) -> String {
        "member \(rival.member) hears a process with this id whose life began at \(Self.isoTime(millis: rival.epoch))"
    }

    static func isoTime(millis: UInt64) -> String {
        Date(timeIntervalSince1970: Double(millis) / 1000).formatted(.iso8601)
    }

    /// Two processes may write as `node` (we, or a member): see `IdentityDoubt`.
    func doubt(_ node: NodeID) {
        core.doubts.doubt(node, serial: store.serial)
    }

    /// The clash is over once no member has reported another life of our id for the window. So
    /// is an impersonation no member has passed on for as long.
    func judgeIdentityClash(now: MonotonicInstant) {
        _ = core.healthState.identityClash.tick(now: now)
        _ = core.healthState.memberClash.tick(now: now)
        _ = core.healthState.trustFaults.expire(now: now, window: core.healthState.identityClash.window)
    }

    /// A record refused by `Membership.merge` (its key is trusted here as another node's): a
    /// `trust` problem, for as long as members pass it on. Writes are not refused: the process
    /// cannot hold this data directory's counter slots without its key, and no member that
    /// knows the key admits it.
    private func noteImpersonation(_ impersonation: Membership.Impersonation, from source: String, now: MonotonicInstant) {
        let record = impersonation.record
        let owner = impersonation.keyOwner
        let subject = "\(record.node) at \(record.address)"
        let message = "a member record (passed on by \(source)) announces \(record.node) at \(record.address) with \(owner)'s key: "
            + "a process holding \(owner)'s secret key claims to be \(record.node), or this node's trust directory names "
            + "\(record.node)'s key \(owner).pub by mistake. The record is refused. Stop that process, or name the file "
            + "\(record.node).pub; if \(owner)'s key is not in safe hands, remove \(owner).pub from every member's trust directory"
        core.healthState.trustFaults.impersonated(subject, message, now: now)
    }

    /// Carries out what a change of the member table calls for (`NodeCore.memberChanged`).
    private func apply(_ change: Membership.Change, now: MonotonicInstant) {
        let actions = core.memberChanged(
            change, now: now, trust: admission.trust, storeSerial: store.serial, retention: configuration.tombstoneRetention)
        for action in actions {
            switch action {
            case .log(let message): logger.info("\(message)")
            case .perform(let sessionActions, let node): perform(sessionActions, for: node, now: now)
            case .dial(let record): dial(record, now: now)
            case .hangUp(let node): closeLink(to: node)
            }
        }
    }

    /// Removes the departures older than the retention (`Membership.nextExpiry` says when).
    func expireDepartures(wallMillis: UInt64) {
        let expired = core.membership.expireDepartures(wallMillis: wallMillis)
        for record in expired { apply(.expired(record), now: instant()) }
    }

    /// Tells every member (on PUB) about records that changed our table.
    func announce(_ records: [MemberRecord]) {
        guard let publisher = sockets.publisher, !records.isEmpty else { return }
        for message in MembersMessage.split(origin: identity.node, wantsReply: false, records: records, limits: codec.limits) {
            _ = try? publisher.send([codec.publishFrame(.members(message))])
        }
    }

    /// Sends our whole table to `node` over its DEALER; with `wantsReply`, it answers with its own.
    func sendMembers(to node: NodeID, wantsReply: Bool) {
        guard let link = sockets.links[node] else { return }
        for message in membersMessages(wantsReply: wantsReply) {
            _ = try? link.dealer.send([codec.encode(.members(message))])
        }
    }

    /// Our whole table, as the messages that carry it (`MembersMessage.split`): this node's own
    /// record and the active members come first, so that a joining node that reads only the first
    /// message (a seed's reply) knows whom to dial; gossip brings the rest.
    func membersMessages(wantsReply: Bool) -> [MembersMessage] {
        MembersMessage.split(origin: identity.node, wantsReply: wantsReply, records: core.membership.allRecords, limits: codec.limits)
    }

    /// A members message that came in on our ROUTER (a join or an exchange): merged, and answered
    /// with our table if asked.
    func serveMembers(_ message: MembersMessage, to client: [UInt8], on socket: any MessageSocket, sender: NodeID?) {
        mergeMembers(message.records, from: message.origin, sender: sender)
        guard message.wantsReply else { return }
        for reply in membersMessages(wantsReply: false) {
            _ = try? socket.send([client, codec.encode(.members(reply))])
        }
    }

    /// A members message that came back on a member's DEALER: the answer to an exchange (or to
    /// our departure: its acknowledgement).
    func receiveMembersReply(_ message: MembersMessage, from node: NodeID) {
        mergeMembers(message.records, from: message.origin, sender: node)
        if Self.acknowledgesDeparture(message.records, of: identity.node), let action = core.leaving?.acknowledged(by: node) { perform(action) }
    }

    /// Whether a members reply shows our departure merged: it lists our record as departed. A
    /// reply to an exchange asked before the departure (ahead of it on the DEALER) counted as
    /// the acknowledgement, and the node could shut down with the departure still unsent
    ///. (A table in several messages lists departures last: the message that holds
    /// ours acknowledges.)
    static func acknowledgesDeparture(_ records: [MemberRecord], of node: NodeID) -> Bool {
        records.contains { $0.node == node && $0.status != .active }
    }

    // MARK: Leave and forget

    /// Leaves the cluster for good, handing this node's writes over first (`LeaveProgress`):
    /// waits (at most `leaveTimeout`) until every member alive now reports holding every update
    /// this process published, then announces the departure and waits (at most 2 s) for each
    /// one's acknowledgement, then shuts down. Every member then lists this node as `left` and
    /// stops dialling it. Local writes are refused from the start (`ReplicaError.leaving`).
    ///
    /// If no member holds those writes when the time is up, the node does **not** leave (unless
    /// `force`): it stays a member, keeps running and accepts writes again, and the result says
    /// so (`Departure.left` false). A second call while the first waits joins it.
    @discardableResult
    public func leave(force: Bool = false) async -> Departure {
        guard !isShutDown else { return core.departure ?? Self.noDeparture }
        if core.leaving != nil || core.membership.local.status != .active {
            // Resumed with the first call's result, or by the shutdown that follows it.
            if force { core.leaving?.force = true }
            return await withCheckedContinuation { callers.leaveWaiters.append($0) }
        }
        // Writes made before the departure are committed and published ahead of it, on the same
        // stream; from here on writes are refused (`ReplicaError.leaving`).
        takeSubmissions()
        flush()
        let now = instant()
        let alive = Set(core.sessions.filter { $0.value.liveness.state == .alive && sockets.links[$0.key] != nil }.map(\.key))
        var progress = LeaveProgress(
            asking: alive, epoch: epoch, published: core.own.sequence,
            earlierWrites: store.holdsVersions(by: identity.node, through: timestampAtStart), force: force, now: now,
            handOffTime: configuration.leaveTimeout, acknowledgementTime: Self.departureAcknowledgementTime)
        var actions: [LeaveProgress.Action] = []
        for node in alive.sorted() {
            if let action = progress.heard(leaveReport(of: node), sameState: hasOurState(node), from: node, now: now) { actions.append(action) }
        }
        if let action = progress.start(now: now) { actions.append(action) }
        core.leaving = progress
        // Writes the clock check still holds (it has not compared clocks yet) are refused now:
        // committed after the departure, they reached no member. (Not when the node stays at
        // once, no member holding its writes: they wait for the check, as before.)
        if !core.commits.writes.isEmpty && !actions.contains(.finish(left: false)) { flush() }
        logger.info("leaving the cluster: handing \(core.own.sequence) update(s)\(progress.earlierWrites ? " and the writes of earlier runs" : "") over to \(alive.count) member(s)")
        return await withCheckedContinuation { continuation in
            callers.leaveWaiters.append(continuation)
            for action in actions { perform(action) }
        }
    }

    /// How long the departure waits for the members' acknowledgements, once they hold our writes.
    static let departureAcknowledgementTime: Duration = .seconds(2)

    /// The result of a `leave` on a node that was already shut down.
    static let noDeparture = Departure(left: false, asked: [], holding: [], acknowledged: [], published: 0, earlierWrites: false)

    /// A member's heartbeat arrived while leaving: does it now hold our writes?
    func leaveHeard(from node: NodeID, now: MonotonicInstant) {
        guard core.leaving != nil else { return }
        let published = core.own.sequence
        core.leaving?.published = published
        let (report, sameState) = (leaveReport(of: node), hasOurState(node))
        guard let action = core.leaving?.heard(report, sameState: sameState, from: node, now: now) else { return }
        perform(action)
    }

    /// What `node`'s latest heartbeat says it holds of our stream.
    private func leaveReport(of node: NodeID) -> PeerReport? { core.sessions[node]?.heartbeat?.reports[identity.node] }

    /// Whether `node`'s latest heartbeat carried our digest: it holds everything we hold.
    private func hasOurState(_ node: NodeID) -> Bool { core.sessions[node]?.heartbeat?.digestRoot == store.digest.root }

    func checkLeaveDeadline(now: MonotonicInstant) {
        guard let action = core.leaving?.tick(now: now) else { return }
        if case .announce = action, let lacking = core.leaving?.lacking, !lacking.isEmpty {
            let names = lacking.sorted().map(\.rawValue).joined(separator: ", ")
            logger.warning("leave: \(names) did not confirm holding this node's writes in time; leaving anyway: they get them from the members that did")
        }
        if case .finish(left: true) = action, let leaving = core.leaving {
            let silent = leaving.asked.subtracting(leaving.acknowledged)
            if !silent.isEmpty { logger.warning("leave: no acknowledgement from \(silent.sorted().map(\.rawValue).joined(separator: ", ")) in time") }
        }
        perform(action)
    }

    private func perform(_ action: LeaveProgress.Action) {
        switch action {
        case .announce:
            let departed = core.membership.leave(wallMillis: configuration.wallClock())
            announce([departed])
            let asked = core.leaving?.asked ?? []
            for node in asked.sorted() { sendMembers(to: node, wantsReply: true) }
            if asked.isEmpty { perform(.finish(left: true)) }
        case .reask(let nodes):
            for node in nodes.sorted() { sendMembers(to: node, wantsReply: true) }
        case .finish(let left):
            finishLeaving(left: left)
        }
    }

    /// Resumes every `leave` caller; a node that left then shuts down (`leave` returns after).
    func finishLeaving(left: Bool = true) {
        let result = core.leaving.map { progress in
            Departure(
                left: left, asked: progress.asked.sorted(), holding: progress.holding.sorted(),
                acknowledged: progress.acknowledged.sorted(), published: progress.published, earlierWrites: progress.earlierWrites)
        } ?? core.departure ?? Self.noDeparture
        core.departure = result
        core.leaving = nil
        if !left && !isShutDown {
            let asked = result.asked.isEmpty ? "none alive" : result.asked.map(\.rawValue).joined(separator: ", ")
            logger.error("not leaving: no member confirmed holding \(result.writesText) (asked: \(asked)); it stays a member and accepts writes again")
        }
        let waiters = callers.leaveWaiters
        callers.leaveWaiters = []
        for waiter in waiters { waiter.resume(returning: result) }
        if left && !isShutDown { shutdown() }
    }

    /// Why `forget` refused.
    public struct ForgetError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Removes member `node` from the cluster for good: every member stops dialling it and lists
    /// it no more. Refused for this node itself and for a member that is alive (stop it first, or
    /// run `leave` on it). If the member starts again later, it rejoins as a new life.
    public func forget(_ node: NodeID) throws {
        let alive = core.sessions[node]?.liveness.state == .alive
        do {
            let tombstone = try core.membership.forget(node, isAlive: alive, wallMillis: configuration.wallClock())
            apply(.forgotten(tombstone), now: instant())
            announce([tombstone])
        } catch .isSelf {
            throw ForgetError(description: "\(node) is this node; use leave to take it out of the cluster")
        } catch .unknown {
            throw ForgetError(description: "no member \(node) is known here")
        } catch .stillAlive {
            throw ForgetError(description: "\(node) is alive; stop it (or run leave on it) before forgetting it. If it was "
                + "just stopped, wait until `peers` no longer shows it alive (suspect after \(timing.suspectAfter) without a word from it)")
        }
    }

    // MARK: Trust

    /// Replaces the trusted CURVE keys without a restart (the CLI re-reads its trust directory):
    /// newly trusted members are dialled, members no longer trusted are hung up on, and the ZAP
    /// handler admits connections by the new list at once.
    public func updateTrust(trusted: Set<String>, keyOwners owners: [String: NodeID]) {
        guard var settings = admission.trust.curve else { return }
        settings.trusted = trusted
        settings.keyOwners = owners
        let (keys, byKey) = KeyTrust.raw(settings)
        guard keys != admission.trust.trustedKeys || byKey != admission.trust.keyOwners else { return }
        admission.trust.trustedKeys = keys
        admission.trust.keyOwners = byKey
        logger.info("trust updated: \(keys.count) key(s)")
        cutRevokedConnections()
        forgetRefusalsOfTrustedKeys()
        let now = instant()
        for record in core.membership.active {
            let admitted = isAdmitted(record)
            if admitted && sockets.links[record.node] == nil {
                dial(record, now: now)
                core.planner.want(.memberJoined, with: record.node)
            } else if !admitted && sockets.links[record.node] != nil {
                logger.warning("member \(record.node)'s key is no longer trusted; hanging up")
                closeLink(to: record.node)
                core.unheardDials.remove(record.node)
                core.planner.remove(record.node)
            }
        }
    }

    /// An active member that is not admitted here is a `trust` problem until it is trusted,
    /// leaves or is forgotten: it is neither dialled nor let in, so nothing it writes arrives
    /// and nothing written here reaches it, which the operator must see.
    /// What is wrong with a trust source the embedding program re-reads (a `.pub` file that holds
    /// no key, a directory that cannot be read), as a `trust` problem whose subject is `source`;
    /// nil clears it. The node keeps the trust the program last gave it (`updateTrust`).
    public func noteTrustSource(_ source: String, problem: String?) {
        guard core.healthState.trustFaults.source(source, problem: problem) else { return }
        if let problem {
            logger.warning("trust source \(source): \(problem)")
        } else {
            logger.info("trust source \(source) reads cleanly again")
        }
    }

    // MARK: Discovery

    func sendBeacon() {
        guard let beacon = sockets.beacon else { return }
        let local = core.membership.local
        guard local.status == .active else { return }
        let host = configuration.advertise?.host ?? (configuration.listen.isWildcard ? "" : configuration.listen.host)
        beacon.broadcast(codec.encode(Beacon(node: identity.node, host: host, port: local.address.port, publicKey: local.publicKey)))
    }

    /// A beacon from a node we do not know yet is a seed to join through.
    func receiveBeacons() {
        guard let beacon = sockets.beacon else { return }
        for _ in 0..<64 {
            guard let (bytes, sender) = beacon.receive() else { return }
            let message: Beacon
            do {
                message = try codec.decodeBeacon(bytes)
            } catch {
                dropMalformed(error, from: "a beacon from \(sender)")
                continue
            }
            guard message.node != identity.node, core.membership[message.node]?.status != .active else { continue }
            if admission.trust.curve != nil {
                guard let key = message.publicKey, admission.trust.trustedKeys.contains(key) else { continue }
                // A trust directory names each key's node: a beacon naming another node with it
                // is not that node (forged beacons with a member's public key, which
                // every beacon shows, were taken as seeds).
                if let owner = admission.trust.keyOwners[key], owner != message.node { continue }
            }
            sockets.seeding.lastBeaconHeard = instant()
            let address = Endpoint(host: message.host.isEmpty ? sender : message.host, port: message.port)
            guard !sockets.seeding.seeds.contains(where: { $0.address == address }),
                  SeedRetirement.mayDiscover(seeds: sockets.seeding.seeds.map(\.discoveredAt), now: instant()) else { continue }
            logger.info("discovered \(message.node) at \(address) by beacon")
            openSeed(address, serverKey: message.publicKey, discovered: true)
        }
    }
}
