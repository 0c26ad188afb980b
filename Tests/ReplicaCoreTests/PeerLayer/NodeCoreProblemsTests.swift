import Foundation
import Testing
@testable import ReplicaCore

/// The problems listed from the core's state and what the actor passes in
/// (`NodeCore.listProblems`), without an actor: each cause listed under its kind and subject,
/// and cleared by the first listing after the cause is gone.
@Suite struct NodeCoreProblemsTests {
    typealias Clock = NodeCoreClockTests

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var cause: @Sendable (inout NodeCore, inout NodeCore.ProblemInputs) -> Void
        /// Listed with the cause: kind, subject, and words the message holds.
        var listed: [(kind: Problem.Kind, subject: String, words: String)]
        var testDescription: String { name }
    }

    static func inputs() -> NodeCore.ProblemInputs {
        NodeCore.ProblemInputs(node: "a", configuration: ReplicaConfiguration(node: "a", listen: Endpoint(host: "127.0.0.1", port: 7000), storage: .memory),
                               trust: KeyTrust(curve: nil))
    }

    static func member(_ node: NodeID, host: String) -> MemberRecord {
        MemberRecord(node: node, epoch: Clock.wall - 1, incarnation: UUID(), status: .active, address: Endpoint(host: host, port: 7000), publicKey: nil)
    }

    static let rows: [Row] = [
        Row(name: "nothing wrong: nothing listed", cause: { _, _ in }, listed: []),
        Row(name: "a value the program could not load", cause: { core, _ in _ = core.healthState.reports.load("settings", "cannot be decoded") },
            listed: [(.load, "settings", "cannot be decoded")]),
        Row(name: "a save the program refused", cause: { core, _ in _ = core.healthState.reports.save("notes", "too large") },
            listed: [(.save, "notes", "too large")]),
        Row(name: "a store file moved away while the node ran", cause: { core, _ in
                core.healthState.misplacedStoreFile = ("/data/replica.sqlite", "the database file was moved")
            }, listed: [(.store, "/data/replica.sqlite", "was moved")]),
        Row(name: "reads of the store fail", cause: { _, inputs in
                inputs.storeReadFailure = StoreReadFailure(path: "/data/replica.sqlite", reason: "disk I/O error", since: Date(), last: Date(), count: 3)
            }, listed: [(.store, "/data/replica.sqlite", "disk I/O error")]),
        Row(name: "a seed refused our handshake: listed by its address", cause: { _, inputs in
                inputs.refusedByPeers = ["10.0.0.2:7000": "10.0.0.2:7000 refused this node's key"]
            }, listed: [(.handshake, "10.0.0.2:7000", "refused this node's key")]),
        Row(name: "a key refused from the host of one member: listed as that member", cause: { core, inputs in
                _ = core.membership.merge([member("b", host: "10.0.0.2")], wallMillis: Clock.wall)
                inputs.refusedHere = [ReplicaStatus.RefusedHandshake(address: "10.0.0.2", publicKey: "K", count: 2, last: Date())]
            }, listed: [(.handshake, "b", "uses a key this node does not trust")]),
        Row(name: "a key refused from a host of two members names neither", cause: { core, inputs in
                _ = core.membership.merge([member("b", host: "10.0.0.2"), member("c", host: "10.0.0.2")], wallMillis: Clock.wall)
                inputs.refusedHere = [ReplicaStatus.RefusedHandshake(address: "10.0.0.2", publicKey: "K", count: 2, last: Date())]
            }, listed: []),
        Row(name: "no member heard for the limit: isolated, naming the seeds asked", cause: { core, inputs in
                for seconds in [0, 11] {
                    core.judgeIsolation(now: Clock.start + .seconds(seconds), local: "a", suspectAfter: .milliseconds(1500),
                                        hasMembersOrSeeds: true, requiringCheck: false)
                }
                inputs.seedsAsked = ["10.0.0.9:7000"]
            }, listed: [(.isolated, Replica.isolationSubject, "seeds asked, with no answer yet: 10.0.0.9:7000")]),
    ]

    @Test(arguments: rows) func eachCauseIsListedAndClearedWithIt(_ row: Row) {
        var core = Clock.core()
        var inputs = Self.inputs()
        row.cause(&core, &inputs)
        let now = Clock.start + .seconds(11)
        let changes = core.listProblems(now: now, date: Date(), inputs: inputs)
        let raised = changes.flatMap { $0.change.raised }
        #expect(raised.count == row.listed.count, "\(raised.map(\.message))")
        for expected in row.listed {
            let problem = core.healthState.problems.all.first { $0.kind == expected.kind && $0.subject == expected.subject }
            #expect(problem?.message.contains(expected.words) == true, "\(expected.kind) \(expected.subject): \(problem?.message ?? "not listed")")
        }
        // The cause gone (what the actor passes in, and the core's own state), nothing stays.
        var healed = Clock.core()
        healed.healthState.problems = core.healthState.problems
        let cleared = healed.listProblems(now: now, date: Date(), inputs: Self.inputs()).flatMap { $0.change.cleared }
        #expect(cleared.count == row.listed.count)
        #expect(healed.healthState.problems.all.isEmpty)
    }
}
