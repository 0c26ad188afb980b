import Foundation

/// The ZAP handler: admits a CURVE client only if its public key is trusted, and records every
/// refusal with the client's address for `status`. A key revoked later loses the connections
/// it already holds (`cutRevokedConnections`).
extension Replica {
    /// The ZAP socket (CURVE only) and the handshake monitors, polled with the other sockets.
    var authenticationSockets: [any MessageSocket] {
        (admission.authenticator.map { [$0] } ?? []) + admission.handshakeMonitors.map(\.socket)
    }

    /// Why two nodes of different security modes cannot talk, in this node's terms.
    var securityMismatch: String {
        (admission.trust.curve != nil ? "the peer does not use CURVE (started --insecure?) while this node does" : "the peer requires CURVE while this node runs insecure")
            + ": the two cannot connect. A cluster is all CURVE or all insecure (docs/security.md, \"Moving a cluster to CURVE\")"
    }

    /// How long after a stall failed handshakes are put down to it.
    static let stallAftermath: Duration = .seconds(5)

    func serviceAuthentication() {
        for monitor in admission.handshakeMonitors {
            let report = monitor.drain()
            for descriptor in report.closed { admission.acceptedConnections.closed(descriptor) }
            core.counters.handshakesFailed += report.failedHandshakes
            if report.mechanismMismatches > 0 {
                warn("security_mismatch", "refused \(report.mechanismMismatches) incoming connection(s) "
                    + (admission.trust.curve != nil ? "without CURVE: " : "that use CURVE: ") + securityMismatch)
            }
            // Insecure, the rest are only counted: port scans and connections closed early.
            if admission.trust.curve != nil, report.failedHandshakes > report.mechanismMismatches {
                let failed = report.failedHandshakes - report.mechanismMismatches
                if let resumed = core.lastStallEnded, instant() - resumed < Self.stallAftermath {
                    // Members re-dial a silent node, and give up on each handshake it cannot run
                    // while stopped: those fail as it resumes. Said as what they are, not as keys.
                    logger.info("\(failed) incoming connection(s) failed their handshake as this node resumed from a stall: members' dials that timed out while it was stopped")
                } else {
                    warn("failed_handshake", "refused \(failed) incoming connection(s) "
                        + "that failed the CURVE handshake: a client with another public key for this node than its own (an old "
                        + "key of it, or another node's key), one that closed during the handshake, or garbage")
                }
            }
        }
        guard let authenticator = admission.authenticator else { return }
        while let request = try? authenticator.receive(maxFrames: 8) {
            do {
                _ = try authenticator.send(answer(request.frames), wait: true)
            } catch {
                logger.warning("could not answer a CURVE authentication request", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Records which key the connection of a message to our sockets proved. False, and the
    /// connection ended, if that key is no longer trusted: the message must not be acted on.
    func admitsConnection(_ sender: MessageSender?) -> Bool {
        guard admission.trust.curve != nil, let sender, let key = sender.userID else { return true }
        // Known: its key was trusted when recorded, and a revocation forgets what it revokes.
        if admission.acceptedConnections.knows(sender.descriptor, as: key) { return true }
        guard isTrusted(z85: key) else {
            if admission.acceptedConnections.endUntrusted(sender.descriptor) { endConnections([sender.descriptor]) }
            return false
        }
        admission.acceptedConnections.heard(on: sender.descriptor, key: key)
        return true
    }

    /// The member whose CURVE key authenticated a message's connection, as the trust names it
    /// (nil insecure, or for a key trusted under no id).
    func keyOwner(of sender: MessageSender?) -> NodeID? {
        guard admission.trust.curve != nil, let key = sender?.userID, let raw = CurveKeyPair.rawBytes(ofZ85: key) else { return nil }
        return admission.trust.keyOwners[raw]
    }

    /// Ends the connections made with keys that are no longer trusted (after a trust change).
    func cutRevokedConnections() {
        // The keys are read before the connections are changed: one access to `admission` at a time.
        let trusted = admission.trust.trustedKeys
        endConnections(admission.acceptedConnections.revoke { key in CurveKeyPair.rawBytes(ofZ85: key).map { trusted.contains($0) } ?? false })
    }

    /// Forgets the refusals of keys trusted now: `status` lists what is still refused (the
    /// count since start stays in `untrustedHandshakesRefused`).
    func forgetRefusalsOfTrustedKeys() {
        admission.refusedHandshakes = admission.refusedHandshakes.filter { !($0.value.publicKey.map(isTrusted(z85:)) ?? false) }
    }

    /// The refused connections `status` lists, by address and key: the most recent ones.
    static let refusedHandshakeRows = 64

    private func isTrusted(z85 key: String) -> Bool {
        CurveKeyPair.rawBytes(ofZ85: key).map { admission.trust.trustedKeys.contains($0) } ?? false
    }

    private func endConnections(_ descriptors: [Int32]) {
        let ports: Set<UInt16> = [configuration.listen.port, configuration.listen.syncPort]
        let ended = descriptors.filter { AcceptedTCPConnection.shutDown(descriptor: $0, ifLocalPortIn: ports) }.count
        guard ended > 0 else { return }
        core.counters.revokedConnectionsEnded += ended
        logger.warning("ended \(ended) connection(s) made with a key that is no longer trusted; its next handshake is refused")
    }

    /// ZAP/1.0 (RFC 27): request = version, request id, domain, address, identity, mechanism,
    /// credentials...; reply = version, request id, status code, status text, user id, metadata.
    private func answer(_ frames: [[UInt8]]) -> [[UInt8]] {
        guard frames.count >= 6 else { return [Array("1.0".utf8), [], Array("400".utf8), Array("malformed".utf8), [], []] }
        let requestID = frames[1]
        let address = String(decoding: frames[3], as: UTF8.self)
        let mechanism = String(decoding: frames[5], as: UTF8.self)
        let key = frames.count >= 7 ? frames[6] : []
        let keyText = CurveKeyPair.z85(ofRaw: key)
        if mechanism == "CURVE" && admission.trust.trustedKeys.contains(key) {
            return [Array("1.0".utf8), requestID, Array("200".utf8), Array("OK".utf8), Array((keyText ?? "").utf8), []]
        }
        // By address and key: two nodes on one host (or one node that changed its key) are two rows.
        let row = address + " " + (keyText ?? "-")
        if admission.refusedHandshakes[row] == nil, admission.refusedHandshakes.count >= Self.refusedHandshakeRows,
           let oldest = admission.refusedHandshakes.min(by: { $0.value.last < $1.value.last })?.key {
            // A client making up a key per attempt added a row each time, for as long as the
            // node ran; the count since start stays in `untrustedHandshakesRefused`.
            admission.refusedHandshakes[oldest] = nil
        }
        var refusal = admission.refusedHandshakes[row] ?? ReplicaStatus.RefusedHandshake(address: address, publicKey: keyText, count: 0, last: Date())
        refusal.count += 1
        refusal.last = Date()
        admission.refusedHandshakes[row] = refusal
        core.counters.untrustedHandshakesRefused += 1
        if refusal.count == 1 || refusal.count % 100 == 0 {
            // Once per 10 s at most, as other refused input: each made-up key was a line.
            warn("untrusted key", "refused connection from \(address): \(mechanism) key \(keyText ?? "-") is not trusted (\(refusal.count) so far)")
        }
        return [Array("1.0".utf8), requestID, Array("400".utf8), Array("key not trusted".utf8), [], []]
    }
}
