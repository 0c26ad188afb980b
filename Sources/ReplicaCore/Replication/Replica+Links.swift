import CZMQ
import Foundation

/// Sockets to members and seeds: opening, closing, and their connection events.
extension Replica {
    // MARK: Members

    /// Whether a member may be dialled: always when insecure; under CURVE only with a trusted
    /// key, and (where the trust source names keys) its own id's key.
    func isAdmitted(_ record: MemberRecord) -> Bool {
        admission.trust.admits(record)
    }

    func linkSecurity(serverKey: [UInt8]?) -> LinkSecurity? {
        guard let curve = admission.trust.curve else { return .insecure }
        guard let serverKey, let text = CurveKeyPair.z85(ofRaw: serverKey) else { return nil }
        return .curve(curve.keys, serverKey: text)
    }

    /// Opens the links to a member, unless it has never been heard here and the places for
    /// such members are taken (`UnheardDials`): then it waits its turn.
    func dial(_ record: MemberRecord, now: MonotonicInstant) {
        let admitted = isAdmitted(record)
        perform(core.dial(record, admitted: admitted, now: now), now: now)
    }

    /// Links unheard for too long give their places to members waiting (`UnheardDials`).
    func maintainUnheardDials(now: MonotonicInstant) {
        let trust = admission.trust
        for action in core.maintainUnheardDials(now: now, admits: { trust.admits($0) }) { perform(action, now: now) }
    }

    private func perform(_ action: NodeCore.DialAction, now: MonotonicInstant) {
        switch action {
        case .open(let record):
            openLink(to: record, now: now)
        case .hangUp(let node, let unheardFor):
            if let unheardFor { logger.info("member \(node) was not heard in \(unheardFor) since it was dialled; hanging up until it may be dialled again") }
            closeLink(to: node)
        }
    }

    /// Opens the sockets to a member (closing any to an old address first).
    func openLink(to record: MemberRecord, now: MonotonicInstant) {
        closeLink(to: record.node)
        guard record.status == .active, isAdmitted(record), let security = linkSecurity(serverKey: record.publicKey) else { return }
        do {
            sockets.links[record.node] = try MemberLink(
                node: record.node, address: record.address, from: configuration.listen, context: sockets.factory,
                limits: configuration.limits, security: security)
            sockets.pollItemsCache = nil
            logger.info("dialling member \(record.node) at \(record.address)")
        } catch {
            logger.error("cannot dial member \(record.node) at \(record.address): \(error)")
        }
    }

    func closeLink(to node: NodeID) {
        guard let link = sockets.links.removeValue(forKey: node) else { return }
        link.close()
        sockets.pollItemsCache = nil
        // Relays taken through it are chosen again at the next housekeeping (`keepHouse`).
        core.relays.relayGone(node)
    }

    func receiveLinkEvents(of node: NodeID, subscriber: Bool) {
        guard let link = sockets.links[node] else { return }
        let socket = subscriber ? link.subscriberEvents : link.dealerEvents
        let now = instant()
        for _ in 0..<64 {
            guard let notice = try? socket.receiveMonitorNotice() else { return }
            switch (notice.event, subscriber) {
            case (.connected, true): core.sessions[node]?.subscriberTCPConnected(now: now)
            case (.connected, false): core.sessions[node]?.dealerTCPConnected(now: now)
            case (.handshakeSucceeded, true):
                core.sessions[node]?.subscriberHandshakeSucceeded(now: now)
                link.handshakeRefusal = nil
            case (.handshakeSucceeded, false):
                core.sessions[node]?.dealerHandshakeSucceeded(now: now)
                link.handshakeRefusal = nil
            case (.disconnected, true): core.sessions[node]?.subscriberDisconnected(now: now, base: timing)
            case (.disconnected, false):
                if let actions = core.sessions[node]?.dealerDisconnected(now: now, base: timing) { perform(actions, for: node, now: now) }
            case (.handshakeFailed, _):
                // The disconnection that follows re-dials, with back-off.
                if let failure = notice.failure, let refusal = refusedHandshakeMessage(failure, by: "member \(node)", at: link.address) {
                    if link.handshakeRefusal != refusal { logger.warning("handshake refused: \(refusal)") }
                    link.handshakeRefusal = refusal
                }
            case (.accepted, _), (.other, _): continue
            }
        }
    }

    // MARK: Seeds

    /// Asks every configured seed (except this node itself) to let us join.
    func contactSeeds() {
        let own = [configuration.listen, core.membership.local.address]
        for seed in configuration.peers where !own.contains(seed) {
            openSeed(seed, serverKey: admission.trust.curve?.peerKeys[seed].flatMap(CurveKeyPair.rawBytes(ofZ85:)))
        }
    }

    /// `discovered`: named by a discovery beacon (bounded in number and life, `SeedRetirement`).
    func openSeed(_ address: Endpoint, serverKey: [UInt8]?, discovered: Bool = false) {
        guard !isShutDown, !sockets.seeding.seeds.contains(where: { $0.address == address }) else { return }
        guard let security = linkSecurity(serverKey: serverKey) else {
            logger.warning("seed \(address) has no trusted public key; not contacted")
            return
        }
        if discovered { closeDiscoveredSeeds(making: 1, now: instant()) }
        do {
            let seed = try SeedContact(
                id: sockets.seeding.nextID, address: address, from: configuration.listen, context: sockets.factory,
                limits: configuration.limits, security: security, discovered: discovered, now: instant())
            sockets.seeding.nextID += 1
            sockets.seeding.seeds.append(seed)
            sockets.pollItemsCache = nil
            sendJoin(to: seed, now: instant())
        } catch {
            logger.error("cannot contact seed \(address): \(error)")
        }
    }

    func sendJoin(to seed: SeedContact, now: MonotonicInstant) {
        for message in membersMessages(wantsReply: true) {
            _ = try? seed.dealer.send([codec.encode(.members(message))])
        }
        seed.lastJoinSent = now
    }

    /// Closes the discovered seeds past their life, and the oldest beyond the limit.
    func closeDiscoveredSeeds(making: Int = 0, now: MonotonicInstant) {
        for id in SeedRetirement.discoveredToClose(seeds: sockets.seeding.seeds.map { ($0.id, $0.discoveredAt) }, making: making, now: now) {
            logger.info("seed \(sockets.seeding.seeds.first { $0.id == id }?.address.description ?? "") (found by beacon, or the last address of a member another member's record ended) made this node no member in time: no longer asked")
            closeSeed(id)
        }
    }

    func closeSeed(_ id: Int) {
        guard let index = sockets.seeding.seeds.firstIndex(where: { $0.id == id }) else { return }
        let seed = sockets.seeding.seeds.remove(at: index)
        seed.close()
        sockets.pollItemsCache = nil
    }

    func receiveSeedEvents(of id: Int) {
        guard let seed = sockets.seeding.seeds.first(where: { $0.id == id }) else { return }
        let now = instant()
        for _ in 0..<16 {
            guard let notice = try? seed.events.receiveMonitorNotice() else { return }
            switch notice.event {
            case .connected: seed.dialer.tcpConnected(now: now)
            case .handshakeSucceeded:
                _ = seed.dialer.handshakeSucceeded(now: now)
                seed.handshakeRefusal = nil
                sendJoin(to: seed, now: now)
            case .disconnected: seed.dialer.disconnected(now: now, timing: .adapted(to: nil, silentRedialEvery: timing.silentRedialEvery))
            case .handshakeFailed:
                if let failure = notice.failure, let refusal = refusedHandshakeMessage(failure, by: "seed", at: seed.address) {
                    if seed.handshakeRefusal != refusal { logger.warning("handshake refused: \(refusal)") }
                    seed.handshakeRefusal = refusal
                }
            case .accepted, .other: continue
            }
        }
    }

    /// A member or seed refused the handshake of our connection to it: what to list as a
    /// `handshake` problem (by its address) when the cause is one an operator must fix: the other
    /// security mode, or our key not trusted there. Other failures (garbled, cut short) are left
    /// to the dialler's back-off (nil). Listed until a handshake succeeds on that link.
    func refusedHandshakeMessage(_ failure: HandshakeFailure, by peer: String, at address: Endpoint) -> String? {
        let message: String
        switch failure {
        case .mechanismMismatch:
            message = "\(peer) at \(address): \(securityMismatch)"
        case .refused(400):
            message = "\(peer) at \(address) refused this node's key (\(admission.trust.curve?.keys.publicKey ?? "-")): its trust directory does "
                + "not hold this node's public key. Copy this node's ID.pub there (docs/security.md)"
        case .refused(let status):
            message = "\(peer) at \(address) refused the connection (authentication status \(status))"
        case .protocolError(ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) where admission.trust.curve != nil:
            message = "\(peer) at \(address) failed the CURVE handshake (a cryptographic error): it holds another key than "
                + "the one this node trusts for it (a rotated key whose new .pub is not here yet?). Check its ID.pub in the "
                + "trust directory (docs/security.md)"
        case .protocolError, .noDetail:
            return nil
        }
        return message
    }

    func receiveSeedReplies(from id: Int) {
        guard let seed = sockets.seeding.seeds.first(where: { $0.id == id }) else { return }
        while let message = try? seed.dealer.receive(maxFrames: 1) {
            do {
                guard message.frames.count == 1, !message.truncated else { throw WireError.wrongFrameCount(message.frames.count, more: message.truncated) }
                guard case .members(let members) = try codec.decode(message.frames[0]) else { throw WireError.invalidField("join reply") }
                if members.origin == identity.node {
                    logger.debug("seed \(seed.address) is this node itself")
                } else {
                    logger.info("joined through seed \(seed.address) (\(members.origin)): \(members.records.count) member records")
                    mergeMembers(members.records, from: members.origin, sender: nil)
                }
                closeSeed(id)
                return
            } catch {
                dropMalformed(error, from: "seed \(seed.address)")
            }
        }
    }

    /// Re-dials seeds whose connection failed, repeats unanswered joins, and contacts the seeds
    /// again when this node has heard no member for a while (all gone, or a partition that
    /// outlived every connection).
    func maintainSeeds(now: MonotonicInstant) {
        let dialTiming = LinkDialer.Timing.adapted(to: nil, silentRedialEvery: timing.silentRedialEvery)
        if !sockets.seeding.seeds.isEmpty {
            let alive = Set(activeSessions.filter { $0.liveness.state == .alive }.map(\.record.address))
            for id in SeedRetirement.redundant(seeds: sockets.seeding.seeds.map { ($0.id, $0.address) }, aliveMembers: alive) {
                logger.info("seed \(sockets.seeding.seeds.first { $0.id == id }?.address.description ?? "") is a member heard here: no longer asked to join")
                closeSeed(id)
            }
            closeDiscoveredSeeds(now: now)
        }
        for seed in sockets.seeding.seeds {
            if seed.dialer.shouldRedial(now: now, peerSilent: false, timing: dialTiming) {
                _ = try? seed.dealer.redial(Endpoint.connecting(to: seed.syncAddress, from: configuration.listen))
                seed.dialer.dialed(now: now)
            }
            if let last = seed.lastJoinSent, now - last >= Self.joinRetry, seed.dialer.isConnected {
                sendJoin(to: seed, now: now)
            }
        }
        if !core.membership.probes.isEmpty {  // (who is heard directly costs a pass over the members)
            for record in core.membership.dueProbes(wallMillis: configuration.wallClock(), heardDirectly: heardDirectly(now: now)) {
                logger.debug("asking \(record.node) at \(record.address) to join: a record not its own ended or moved it while it was not heard here")
                openSeed(record.address, serverKey: record.publicKey, discovered: true)
            }
        }
        let anyAlive = activeSessions.contains { $0.liveness.state == .alive }
        if sockets.seeding.recontact.tick(anyMemberAlive: anyAlive, hasSeeds: !configuration.peers.isEmpty, now: now, after: timing.downAfter) {
            logger.info("no member heard for \(timing.downAfter); contacting the seeds again")
            contactSeeds()
        }
        judgeIsolation(now: now)
    }

    /// Lists this node as `isolated` while it has heard no member for `Isolation.limit`, or has
    /// heard members none of which reports hearing it (`NodeCore.judgeIsolation`).
    func judgeIsolation(now: MonotonicInstant) {
        let hasMembersOrSeeds = hasMembersOrSeeds
        core.judgeIsolation(
            now: now, local: identity.node, suspectAfter: timing.suspectAfter, hasMembersOrSeeds: hasMembersOrSeeds,
            requiringCheck: configuration.requireClockCheck)
    }

    static let isolationSubject = "members"

    static let joinRetry: Duration = .seconds(2)
}
