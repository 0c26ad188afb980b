import Foundation
import Logging

/// The problems `status` and `health` list, each kind derived from the state that causes it:
/// the one place the board changes. Runs at the end of every housekeeping run and before each
/// `status` or `health`, so a fault shows as soon as its state does and clears with it.
extension Replica {
    func listProblems(now: ContinuousClock.Instant) {
        let date = Date()
        let node = identity.node.rawValue
        func facts(_ message: String?, subject: String = node) -> [String: ProblemFact] {
            message.map { [subject: ProblemFact($0)] } ?? [:]
        }

        note(.load, core.healthState.problems.list(.load, core.healthState.reports.loadErrors, at: date))
        // A key a failing commit refused is listed as that; one the program refused, as its own.
        note(.save, core.healthState.problems.list(.save, core.healthState.reports.refusedSaves.merging(core.commits.failedSaves) { _, failed in failed }, at: date))
        note(.commit, core.healthState.problems.list(.commit, core.commits.commitProblem(shortOfSpace: shortOfSpaceMessage).map { [Self.commitSubject: $0] } ?? [:], at: date))
        var store: [String: ProblemFact] = [:]
        if let misplaced = core.healthState.misplacedStoreFile { store[misplaced.path] = ProblemFact(misplaced.message) }
        if let failure = self.store.readFailure {
            store[failure.path] = ProblemFact(failure.description, since: failure.since, last: failure.last, occurrences: failure.count)
        }
        note(.store, core.healthState.problems.list(.store, store, at: date))
        note(.clock, core.healthState.problems.list(.clock, facts(ownClockProblem(now: now)), at: date))
        note(.peerClock, core.healthState.problems.list(.peerClock, Dictionary(uniqueKeysWithValues: core.healthState.memberClockFaults.map { ($0.key.rawValue, $0.value) }), at: date))
        let clash = core.healthState.identityClash.rival.map { ReplicaError.identityClash(evidence: Self.clashEvidence($0)).description }
        note(.identity, core.healthState.problems.list(.identity, facts(clash), at: date))
        note(.memberIdentity, core.healthState.problems.list(.memberIdentity, core.healthState.memberClash.problems, at: date))
        note(.trust, core.healthState.problems.list(.trust, messages: trustProblems(), at: date))
        note(.handshake, core.healthState.problems.list(.handshake, handshakeProblems(), at: date))
        note(.isolated, core.healthState.problems.list(.isolated, facts(isolationProblem(), subject: Self.isolationSubject), at: date))
        let absent = core.healthState.absence.returned.map { Self.absenceMessage(since: $0.since, until: $0.until, retentionMillis: core.healthState.absence.retentionMillis) }
        note(.absence, core.healthState.problems.list(.absence, facts(absent), at: date))
        note(.claims, core.healthState.problems.list(.claims, unservedClaims(now: now, date: date), at: date))
        listSyncStalls(now: now)
    }

    /// Members whose heartbeats claim updates they do not serve (`PeerSession.claimsUnserved`).
    private func unservedClaims(now: ContinuousClock.Instant, date: Date) -> [String: ProblemFact] {
        var claims: [String: ProblemFact] = [:]
        for session in activeSessions {
            guard let since = session.claimsUnserved else { continue }
            let wait = PeerSession.unservedCatchUpWait(afterUnserved: session.unservedRepairs)
            claims[session.node.rawValue] = ProblemFact(
                "\(session.node)'s heartbeats claim updates it does not serve: it answered \(session.unservedRepairs) repairs in a row "
                    + "that it no longer holds them (a bug, or a member that lies). Its claims are chased once every \(wait), not at each "
                    + "heartbeat; what it does serve still arrives. If it keeps on, stop it and compare its version and logs",
                since: date - Double((now - since) / .milliseconds(1)) / 1000, occurrences: session.unservedRepairs)
        }
        return claims
    }

    /// Logs what a listing changed. Kinds whose cause is logged where it happens (a failed commit,
    /// a reported load error or refused save, a refused handshake) log nothing here.
    private func note(_ kind: Problem.Kind, _ change: ProblemBoard.Change) {
        for problem in change.raised {
            switch kind {
            case .load, .save, .commit, .handshake, .sync, .divergence: continue
            case .clock, .identity, .memberIdentity, .trust, .absence, .store: logger.error("\(problem.message)")
            case .peerClock, .claims: logger.warning("\(problem.message)")
            case .isolated: logger.warning("isolated: \(problem.message)")
            }
        }
        if kind == .clock {
            for problem in change.redescribed { logger.error("\(problem.message)") }
        }
        for problem in change.cleared {
            switch kind {
            case .load, .save, .commit, .handshake, .sync, .divergence, .absence: continue
            case .peerClock: logger.debug("\(problem.subject)'s clock is no longer listed")
            case .clock: logger.info("this node's clock is within reach of its members' again; writes are accepted")
            case .identity:
                logger.info("no member has heard another process with id \(problem.subject) for \(core.healthState.identityClash.window): writes are accepted again")
            case .memberIdentity:
                logger.info("member \(problem.subject) has neither moved nor been contradicted for \(core.healthState.memberClash.window): no longer listed as used by two processes")
            case .trust: logger.info("trust problem over: \(problem.subject)")
            case .isolated: logger.info("members hear this node again: no longer isolated")
            case .store: logger.notice("store problem over: \(problem.subject) (a database file back in place keeps what the node committed meanwhile)")
            case .claims: logger.info("\(problem.subject) serves what its heartbeats claim again")
            }
        }
    }
}
