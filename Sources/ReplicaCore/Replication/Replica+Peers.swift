import Foundation

/// Heartbeats, peer liveness, and the timers that start anti-entropy.
extension Replica {
    /// Any message from a peer proves it is alive.
    func heard(from index: Int, node: NodeID) {
        let now = ContinuousClock.now
        peers[index].lastHeard = now
        if peers[index].node != node {
            if let old = peers[index].node {
                logger.warning("peer \(peers[index].endpoint) changed id from \(old) to \(node)")
            }
            peers[index].node = node
        }
        setState(.alive, of: index)
    }

    func receive(_ heartbeat: Heartbeat, from index: Int) {
        heard(from: index, node: heartbeat.origin)
        var peer = peers[index]
        defer { peers[index] = peer }
        if peer.incarnation != heartbeat.incarnation {
            if peer.incarnation != nil {
                logger.info("peer \(heartbeat.origin) has a new incarnation (data directory replaced)")
                peer.syncWanted = true
            }
            peer.incarnation = heartbeat.incarnation
        }
        if let last = peer.lastSequence {
            if heartbeat.sequence > last {
                // Every update up to this sequence was sent before the heartbeat on one ordered
                // stream, so these were dropped (high-water mark, reconnect).
                peers[index] = peer
                noteMissing(last + 1...heartbeat.sequence, of: index)
                peer = peers[index]
            } else if heartbeat.sequence < last {
                peer.syncWanted = true  // the peer restarted: its sequence began again
                peer.syncReason = "peer restarted"
            }
        }
        peer.lastSequence = heartbeat.sequence
        // Digests differ all the time while writes are in flight. Divergence is a difference
        // that holds while neither side changes: our root and the peer's root both stayed put
        // for a whole heartbeat interval and are still not equal. (Losses during writes are
        // found by sequence numbers instead.)
        let ourRoot = store.digest.root
        let bothQuiet = peer.lastDigestRoot == heartbeat.digestRoot && peer.ourRootAtLastHeartbeat == ourRoot
        if heartbeat.digestRoot != ourRoot && bothQuiet && peer.sync == nil {
            peer.syncWanted = true
            peer.syncReason = "digests differ while both are quiet"
        }
        peer.lastDigestRoot = heartbeat.digestRoot
        peer.ourRootAtLastHeartbeat = ourRoot
        peer.clockOffsetMillis = Int64(heartbeat.timestamp.wallMillis) - Int64(HybridLogicalClock.systemClock())
        do {
            try clock.receive(heartbeat.timestamp)
        } catch {
            counters.futureTimestampsRejected += 1
        }
    }

    func setState(_ state: PeerState, of index: Int) {
        let old = peers[index].state
        guard old != state else { return }
        peers[index].state = state
        let name = peers[index].node.map { "\($0) (\(peers[index].endpoint))" } ?? "\(peers[index].endpoint)"
        logger.info("peer \(name) is \(state.rawValue) (was \(old.rawValue))")
        if state == .down { peers[index].reconnectSyncSinceDown = false }
        if state == .alive && (old == .unknown || old == .down) {
            // A DEALER reconnect (see receiveDealerEvents) usually comes first and has already
            // started a sync with this peer: a second full pass would only double the work
            // (after a partition with 10,000 divergent keys it slowed convergence by seconds).
            if peers[index].reconnectSyncSinceDown {
                peers[index].reconnectSyncSinceDown = false
            } else {
                peers[index].syncWanted = true
                peers[index].syncReason = "peer connected"
            }
        }
    }

    /// The DEALER that carries our sync requests to this peer connected or lost its connection.
    ///
    /// Without this, a healed partition was noticed only when the peer's next heartbeat arrived
    /// on the SUB socket (its own reconnect, then up to 1 s), and a sync in flight when the
    /// connection dropped (its request or reply chunks lost with it) waited for the 10 s sync
    /// timeout. Now a re-established connection starts a fresh sync at once, even while the
    /// peer still counts as down: the DEALER is exactly the path the sync uses, so it works.
    func receiveDealerEvents(from index: Int) {
        for _ in 0..<64 {
            let event: ZMQSocket.MonitorEvent?
            do {
                event = try peers[index].dealerEvents.receiveMonitorEvent()
            } catch {
                logger.warning("monitor receive failed: \(error)")
                return
            }
            guard let event else { return }
            switch event {
            case .disconnected:
                peers[index].dealerDisconnected = true
                peers[index].dealerConnected = false
            case .handshakeSucceeded:
                peers[index].dealerConnected = true
                peers[index].dealerHandshakes += 1
                // The first handshake delivers the start-up request already queued in the pipe.
                guard peers[index].dealerHandshakes > 1 else { continue }
                // A sync whose connection never dropped while it ran is left to finish.
                if peers[index].sync != nil && !peers[index].dealerDisconnected { continue }
                logger.info("sync link to \(peers[index].endpoint) reconnected; syncing")
                peers[index].sync = nil  // replies to the abandoned request are ignored
                requestSync(with: index, reason: "reconnected")
                startSync(with: index)
                peers[index].reconnectSyncSinceDown = peers[index].state == .down || peers[index].state == .suspect
            case .handshakeFailed, .other:
                continue
            }
        }
    }

    func receiveSubscriberEvents(from index: Int) {
        while let event = try? peers[index].subscriberEvents.receiveMonitorEvent() {
            switch event {
            case .handshakeSucceeded: peers[index].subscriberConnected = true
            case .disconnected: peers[index].subscriberConnected = false
            case .handshakeFailed, .other: continue
            }
        }
    }

    /// Re-dials the SUB and DEALER of peers that need it. libzmq's own reconnection is off
    /// (see `ZMQSocket.setClusterConnectionOptions`), so this is how connections come back:
    /// a socket whose handshake has not completed (peer not up yet, refused, partitioned) is
    /// re-dialled every 0.3 s, and one whose peer fell silent while the connection looked up
    /// (a partition leaves TCP connections established but dead) every second.
    func redialPeers(now: ContinuousClock.Instant) {
        for index in peers.indices {
            let silent = now - (peers[index].lastHeard ?? started) >= configuration.suspectAfter
            func due(connected: Bool, dialed: ContinuousClock.Instant) -> Bool {
                (!connected && now - dialed >= Self.redialUnconnectedEvery) || (silent && now - dialed >= Self.redialSilentEvery)
            }
            let peer = peers[index]
            if due(connected: peer.subscriberConnected, dialed: peer.subscriberDialed) {
                redial(peer.subscriber, peer.publishAddress, of: peer)
                peers[index].subscriberDialed = now
                // Updates lost with the old pipe show up as a sequence gap and are repaired.
                peers[index].subscriberConnected = false
            }
            if due(connected: peer.dealerConnected, dialed: peer.dealerDialed) {
                redial(peer.dealer, peer.syncAddress, of: peer)
                peers[index].dealerDialed = now
                peers[index].dealerConnected = false
                // The request in flight went with the old pipe; the next handshake syncs afresh.
                peers[index].dealerDisconnected = true
                if peers[index].sync != nil {
                    peers[index].sync = nil
                    peers[index].syncWanted = true
                }
            }
        }
    }

    private func redial(_ socket: ZMQSocket, _ address: String, of peer: PeerLink) {
        do {
            try socket.redial(address)
        } catch {
            logger.warning("re-dialling \(peer.endpoint) failed: \(error)")
        }
    }

    /// Records lost updates of a peer; `runTimers` asks the peer to resend them.
    func noteMissing(_ range: ClosedRange<UInt64>, of index: Int) {
        peers[index].sequenceGaps += 1
        if peers[index].behindSince == nil { peers[index].behindSince = .now }
        if let last = peers[index].missing.last, last.upperBound + 1 >= range.lowerBound {
            peers[index].missing[peers[index].missing.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
        } else {
            peers[index].missing.append(range)
        }
    }

    func requestSync(with index: Int, reason: String) {
        peers[index].syncWanted = true
        peers[index].syncReason = reason
    }

    func runTimers() {
        let now = ContinuousClock.now
        redialPeers(now: now)
        if now >= nextHeartbeat {
            publishHeartbeat()
            nextHeartbeat = now + configuration.heartbeatInterval
        }
        if now >= nextPeriodicSync {
            for index in peers.indices where peers[index].state != .down {
                requestSync(with: index, reason: Self.periodicReason)
            }
            nextPeriodicSync = now + configuration.periodicSyncInterval
        }
        if now >= nextTombstoneSweep {
            collectTombstones()
            nextTombstoneSweep = now + configuration.tombstoneSweepInterval
        }
        for index in peers.indices {
            if let heard = peers[index].lastHeard {
                let silence = now - heard
                if silence >= configuration.downAfter {
                    setState(.down, of: index)
                } else if silence >= configuration.suspectAfter {
                    setState(.suspect, of: index)
                }
            }
            if let sync = peers[index].sync, now - sync.lastProgress >= configuration.syncTimeout {
                logger.warning("sync with \(peers[index].endpoint) timed out after \(sync.chunks) chunks; will retry")
                peers[index].sync = nil
                peers[index].syncWanted = true
            }
            if peers[index].syncWanted && peers[index].sync == nil && peers[index].state != .down {
                startSync(with: index)
            }
            if let repair = peers[index].repair, now - repair.lastProgress >= configuration.syncTimeout {
                logger.warning("repair from \(peers[index].endpoint) timed out; syncing instead")
                peers[index].repair = nil
                peers[index].missing.removeAll()
                requestSync(with: index, reason: "repair timed out")
            }
            if peers[index].repair == nil && peers[index].sync == nil && !peers[index].missing.isEmpty && peers[index].state != .down {
                startRepair(with: index)
            }
        }
    }

    private func publishHeartbeat() {
        guard let publisher else { return }
        let heartbeat = Heartbeat(
            origin: identity.node, incarnation: identity.incarnation, sequence: sequence,
            timestamp: clock.tick(), digestRoot: store.digest.root, entryCount: UInt64(store.count))
        do {
            try publisher.send(codec.publishFrames(.heartbeat(heartbeat)))
        } catch {
            logger.error("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }
}
