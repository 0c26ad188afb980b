import Foundation
import Logging

/// The actor's side of the problems (`NodeCore+Problems.swift`): it passes in what only it
/// sees, at the end of every housekeeping run and before each `status` or `health`, so a fault
/// shows as soon as its state does and clears with it, and logs what the listing changed.
extension Replica {
    func listProblems(now: MonotonicInstant) {
        var refusedByPeers: [String: String] = [:]
        for link in sockets.links.values { if let refusal = link.handshakeRefusal { refusedByPeers[link.address.description] = refusal } }
        for seed in sockets.seeding.seeds { if let refusal = seed.handshakeRefusal { refusedByPeers[seed.address.description] = refusal } }
        let inputs = NodeCore.ProblemInputs(
            node: identity.node, configuration: configuration, storeReadFailure: store.readFailure, refusedByPeers: refusedByPeers,
            refusedHere: Array(admission.refusedHandshakes.values), trust: admission.trust,
            seedsAsked: sockets.seeding.seeds.map(\.address.description))
        for (kind, change) in core.listProblems(now: now, date: Date(), inputs: inputs) { note(kind, change) }
    }

    /// Logs what a listing changed. Kinds whose cause is logged where it happens (a failed commit,
    /// a reported load error or refused save, a refused handshake) log nothing here.
    func note(_ kind: Problem.Kind, _ change: ProblemBoard.Change) {
        for problem in change.raised {
            switch kind {
            case .load, .save, .commit, .handshake: continue
            case .clock, .identity, .memberIdentity, .trust, .absence, .store: logger.error("\(problem.message)")
            case .peerClock, .claims, .sync, .divergence: logger.warning("\(problem.message)")
            case .isolated: logger.warning("isolated: \(problem.message)")
            }
        }
        if kind == .clock {
            for problem in change.redescribed { logger.error("\(problem.message)") }
        }
        for problem in change.cleared {
            switch kind {
            case .load, .save, .commit, .handshake, .absence: continue
            case .sync:
                let longest = SyncPlanner.longestTimeout(base: timing.requestTimeout) * 2
                logger.info("syncs with \(problem.subject) no longer time out (one completed, or none was wanted for \(longest))")
            case .divergence:
                logger.info("this node's data and \(problem.subject)'s no longer differ as they did (they agree, or one of them changed)")
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
