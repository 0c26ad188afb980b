import Foundation

/// The problems `status` and `health` list, each kind derived from the state that causes it:
/// the one place the board changes. The actor lists them at the end of every housekeeping run
/// and before each `status` or `health` (divergences once a heartbeat interval), passing in
/// what only it sees, and logs what changed.
extension NodeCore {
    /// What the core does not hold: the node's settings, the store's read failures, the
    /// handshakes its sockets saw refused, the keys it trusts and the seeds it asked.
    struct ProblemInputs {
        var node: NodeID
        var configuration: ReplicaConfiguration
        var storeReadFailure: StoreReadFailure?
        /// Members' links and seeds that refused our handshakes: address, refusal.
        var refusedByPeers: [String: String] = [:]
        /// Connections this node refused (keys it does not trust).
        var refusedHere: [ReplicaStatus.RefusedHandshake] = []
        var trust: KeyTrust
        /// Seeds asked to let this node join, with no answer yet.
        var seedsAsked: [String] = []
    }

    typealias ProblemChanges = [(kind: Problem.Kind, change: ProblemBoard.Change)]

    mutating func listProblems(now: MonotonicInstant, date: Date, inputs: ProblemInputs) -> ProblemChanges {
        func facts(_ message: String?, subject: String) -> [String: ProblemFact] {
            message.map { [subject: ProblemFact($0)] } ?? [:]
        }
        let node = inputs.node.rawValue
        let configuration = inputs.configuration
        var store: [String: ProblemFact] = [:]
        if let misplaced = healthState.misplacedStoreFile { store[misplaced.path] = ProblemFact(misplaced.message) }
        if let failure = inputs.storeReadFailure {
            store[failure.path] = ProblemFact(failure.description, since: failure.since, last: failure.last, occurrences: failure.count)
        }
        let frameBytes = configuration.limits.maxFrameBytes
        let clash = healthState.identityClash.rival.map { ReplicaError.identityClash(evidence: Replica.clashEvidence($0)).description }
        let absent = healthState.absence.returned.map {
            Replica.absenceMessage(since: $0.since, until: $0.until, retentionMillis: healthState.absence.retentionMillis)
        }
        let current: [(Problem.Kind, [String: ProblemFact])] = [
            (.load, healthState.reports.loadErrors),
            // A key a failing commit refused is listed as that; one the program refused, as its own.
            (.save, healthState.reports.refusedSaves.merging(commits.failedSaves) { _, failed in failed }),
            (.commit, commits.commitProblem(shortOfSpace: { $0.shortOfSpaceMessage(frameBytes: frameBytes) })
                .map { [Replica.commitSubject: $0] } ?? [:]),
            (.store, store),
            (.clock, facts(ownClockProblem(now: now, requiringCheck: configuration.requireClockCheck), subject: node)),
            (.peerClock, Dictionary(uniqueKeysWithValues: healthState.memberClockFaults.map { ($0.key.rawValue, $0.value) })),
            (.identity, facts(clash, subject: node)),
            (.memberIdentity, healthState.memberClash.problems),
            (.trust, trustProblems(inputs.trust).mapValues { ProblemFact($0) }),
            (.handshake, handshakeProblems(refusedByPeers: inputs.refusedByPeers, refusedHere: inputs.refusedHere)),
            (.isolated, facts(isolationProblem(inputs), subject: Replica.isolationSubject)),
            (.absence, facts(absent, subject: node)),
            (.claims, unservedClaims(now: now, date: date)),
        ]
        var changes = current.map { (kind: $0.0, change: healthState.problems.list($0.0, $0.1, at: date)) }
        if let stalls = syncStalls(now: now, configuration: configuration) {
            changes.append((.sync, healthState.problems.list(.sync, messages: stalls, at: date)))
        }
        return changes
    }

    /// The `trust` problems: sources and impersonations (`TrustFaults`), and, under CURVE, every
    /// active member whose key is not trusted here. A listed member's message follows its reason
    /// and address (it moved, or came back with another key).
    func trustProblems(_ trust: KeyTrust) -> [String: String] {
        var problems = healthState.trustFaults.problems
        guard trust.curve != nil else { return problems }
        for record in membership.active where !trust.admits(record) {
            let reason: String
            let remedy: String
            if let key = record.publicKey, let owner = trust.keyOwners[key], owner != record.node {
                reason = "its key is trusted as \(owner)'s, not \(record.node)'s"
                remedy = "Stop the process that runs as \(record.node) with \(owner)'s key"
            } else if record.publicKey == nil {
                reason = "it has no CURVE key (it runs insecure)"
                remedy = "Restart it with --key and --trust (docs/security.md, \"Moving a cluster to CURVE\"), or forget it once it is down"
            } else {
                reason = "its key is not trusted here"
                remedy = "Copy its ID.pub into this node's trust directory (after a key rotation, its new one), or forget it once it is down"
            }
            // Not "nothing replicates": a member that trusts both passes writes on (a relay).
            problems[record.node.rawValue] = "member \(record.node) at \(record.address): \(reason); this node neither dials it nor lets it connect "
                + "(members that trust it may still relay writes between them). \(remedy)"
        }
        return problems
    }

    /// The `handshake` problems: members and seeds that refused our handshakes (by address), and
    /// members at whose host a connection came with a key not trusted here (by member: the one
    /// member at that host is named, since a key rotated on it, its new .pub not here yet, showed
    /// only as that member going down; only the host is known, so the message says both).
    func handshakeProblems(refusedByPeers: [String: String], refusedHere: [ReplicaStatus.RefusedHandshake]) -> [String: ProblemFact] {
        var problems = refusedByPeers.mapValues { ProblemFact($0) }
        guard !refusedHere.isEmpty else { return problems }
        var membersAt: [String: [MemberRecord]] = [:]
        for record in membership.listed where record.status == .active { membersAt[record.address.host, default: []].append(record) }
        for refusal in refusedHere.sorted(by: { $0.last < $1.last }) {
            guard let atHost = membersAt[refusal.address], atHost.count == 1, let member = atHost.first else { continue }
            let earlier = problems[member.node.rawValue]?.occurrences ?? 0
            problems[member.node.rawValue] = ProblemFact(
                "a connection from \(refusal.address), the host of member \(member.node) (\(member.address)), uses a key this node does not "
                    + "trust (\(refusal.publicKey ?? "-")): if \(member.node)'s key was rotated, copy its new \(member.node).pub into the trust "
                    + "directory (docs/security.md, \"Rotating a key\"); if another process on that host made it, \(member.node) is not concerned",
                last: refusal.last, occurrences: earlier + refusal.count)
        }
        return problems
    }

    /// The `isolated` problem, from `isolation`'s last judgement.
    func isolationProblem(_ inputs: ProblemInputs) -> String? {
        switch healthState.isolation.condition {
        case nil: return nil
        case .alone(let alone):
            let waiting = inputs.seedsAsked.isEmpty ? "" : " (seeds asked, with no answer yet: \(inputs.seedsAsked.joined(separator: ", ")))"
            let unchecked = clockCheck.hasAgreed ? "" : (inputs.configuration.requireClockCheck
                ? "; its clock has not been compared with a member's since it started, so writes are refused (requireClockCheck)"
                : "; its clock has not been compared with a member's since it started, so writes made here carry an unchecked clock")
            return "no member heard for \(Int(alone / .seconds(1))) s\(waiting): writes made here reach no one until a "
                + "member is reached\(unchecked). Check that the seeds' addresses are right and reachable, and that members are up"
                + (inputs.trust.curve == nil ? "" : "; with CURVE, also that each --peer ID@HOST:PORT names the node that listens there (a seed "
                    + "dialled with another node's key drops the handshake without a word)")
        case .unheard(let unheard):
            return "members are heard, but for \(Int(unheard / .seconds(1))) s none has reported hearing this node: writes made "
                + "here reach no one. Usually its key is not trusted by them (a key that is not its own, or a new key not yet "
                + "copied to their trust directories: see their trust problems), or its address (--advertise) is wrong, or "
                + "links work one way only, or a slow link is saturated (a large transfer, whose data the members' heartbeats "
                + "wait behind: then it passes by itself)"
        }
    }

    /// Members whose heartbeats claim updates they do not serve (`PeerSession.claimsUnserved`).
    func unservedClaims(now: MonotonicInstant, date: Date) -> [String: ProblemFact] {
        var claims: [String: ProblemFact] = [:]
        for node in membership.active.map(\.node) {
            guard let session = sessions[node], let since = session.claimsUnserved else { continue }
            let wait = PeerSession.unservedCatchUpWait(afterUnserved: session.unservedRepairs)
            claims[node.rawValue] = ProblemFact(
                "\(node)'s heartbeats claim updates it does not serve: it answered \(session.unservedRepairs) repairs in a row "
                    + "that it no longer holds them (a bug, or a member that lies). Its claims are chased once every \(wait), not at each "
                    + "heartbeat; what it does serve still arrives. If it keeps on, stop it and compare its version and logs",
                since: date - Double((now - since) / .milliseconds(1)) / 1000, occurrences: session.unservedRepairs)
        }
        return claims
    }

    /// The `sync` problems: members whose syncs keep timing out while waiting for a chunk. A
    /// node behind a link too slow for a chunk in the longest patience (or with a member that
    /// drops its requests) would otherwise never catch up and show nothing. Cleared when a sync
    /// with the member completes, or no sync with it has timed out for a while. Nil: nothing to
    /// list or clear (no timeout on record).
    mutating func syncStalls(now: MonotonicInstant, configuration: ReplicaConfiguration) -> [String: String]? {
        guard !planner.timeoutHistory.isEmpty || !healthState.problems.of(.sync).isEmpty else { return nil }
        let requestTimeout = configuration.syncTimeout
        let longest = SyncPlanner.longestTimeout(base: requestTimeout)
        var current: [String: String] = [:]
        for stall in planner.stalls(now: now, window: longest * 2) {
            let late = stall.lateChunks == 0
                ? "no chunk of them arrived late either"
                : "\(stall.lateChunks) chunks of them arrived late (\(stall.lateBytes) bytes, kept)"
            current[stall.peer.rawValue] = "the last \(stall.timeouts) syncs with \(stall.peer) timed out waiting for a chunk (\(longest) at most); "
                + "\(late). The link to it may be too slow to carry a chunk (up to \(configuration.limits.maxChunkBytes) bytes) in that time, "
                + "or it does not answer syncs: what this node misses arrives slowly or not at all. Behind a slow link, raise "
                + "the sync chunk timeout (--sync-chunk-timeout, here \(requestTimeout)) of this node "
                + "to at least the time a chunk takes to cross, and of \(stall.peer) if it runs 0.22 or older (it gives up a reply it "
                + "cannot send for 4 times its own; before 0.22, each timeout also costs a resent reply)"
        }
        return current
    }

    /// Lists, as `divergence` problems, the members whose data and ours differ although syncs
    /// with them complete: both digest roots stayed as they were through several of them, one
    /// in full (`PeerSession.unsettledDifference`). Nothing in the protocol leaves such a
    /// difference in place, so it is a fault to look at, not a state to wait out. It must
    /// outlast what does explain a quiet difference for a while: a tombstone collected by one
    /// node's sweep and not yet by the other's, whose clocks may differ by the drift limit.
    /// Cleared when the roots agree or move.
    mutating func listDivergences(now: MonotonicInstant, configuration: ReplicaConfiguration) -> ProblemBoard.Change {
        let after = configuration.tombstoneSweepInterval + configuration.maxClockDrift * 2
        var current: [String: String] = [:]
        // Not for a member that is down (what we last heard of it is stale); a suspect one stays
        // listed rather than clearing and coming back with every missed heartbeat.
        for session in activeSessions where session.liveness.state != .down {
            guard let age = session.unsettledDifference(now: now, after: after) else { continue }
            current[session.node.rawValue] = "this node's data and \(session.node)'s have differed for \(Int(age / .seconds(1))) s, neither changing, "
                + "through \(PeerSession.syncsBeforeDivergence) or more completed syncs with it, one asking for the differing buckets "
                + "in full: syncing does not settle it. If either node lists a clock, peerClock, commit, store or sync problem, that "
                + "is why; if the two run with different tombstone or clock drift settings, make them equal; otherwise compare every "
                + "entry the two stores hold, tombstones included (docs/operations.md, the divergence problem) and report it"
        }
        return healthState.problems.list(.divergence, messages: current)
    }
}
