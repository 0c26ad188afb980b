import Foundation
import Testing
@testable import ReplicaCore

/// Which sync the core starts (`NodeCore.chooseSync`), without an actor: a catch-up goes to a
/// reachable member with a link, waits while the intake is busy, and says so once it has
/// waited past its patience with no member to serve it.
@Suite struct NodeCoreSyncTests {
    typealias Clock = NodeCoreClockTests
    static let timing = PeerTiming(heartbeatInterval: .milliseconds(500), suspectAfter: .milliseconds(1500), downAfter: .seconds(5), requestTimeout: .seconds(2))

    /// A core with members `b` and `c`, each heard at time 0 and with a sync link, connected
    /// then if `connected`.
    static func core(connected: Bool = true, heard: Bool = true) -> NodeCore {
        var core = Clock.core()
        let local = PeerSession.LocalView(node: "a", digestRoot: 1, membersDigest: 0, syncing: false)
        for node: NodeID in ["b", "c"] {
            let record = MemberRecord(node: node, epoch: Clock.wall - 10, incarnation: UUID(), status: .active,
                                      address: Endpoint(host: "10.0.0.\(node == "b" ? 2 : 3)", port: 7000), publicKey: nil)
            _ = core.membership.merge([record], wallMillis: Clock.wall)
            var session = PeerSession(record: record, now: Clock.start)
            if connected {
                session.dealerTCPConnected(now: Clock.start)
                session.dealerHandshakeSucceeded(now: Clock.start)
            }
            if heard {
                let heartbeat = Heartbeat(origin: node, incarnation: record.incarnation, epoch: record.epoch, sequence: node == "b" ? 3 : 9,
                                          timestamp: .zero, digestRoot: 2, entryCount: 0)
                _ = session.heartbeatReceived(heartbeat, local: local, now: Clock.start, wallMillis: Clock.wall)
            }
            core.sessions[node] = session
        }
        return core
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var connected = true
        var heard = true
        var linked: Set<NodeID> = ["b", "c"]
        var wantCatchUp = true
        var intakeBusy = false
        /// When it is asked, in milliseconds, and what each answer is: a member to sync with,
        /// nothing, or a waiting catch-up (the words its message holds).
        var asks: [(at: Int, expect: Expect)]
        var testDescription: String { name }
    }

    enum Expect: Sendable, Equatable {
        case start(NodeID, requestID: UInt64)
        case nothing
        case waiting(String)
    }

    static let rows: [Row] = [
        Row(name: "nothing wanted: no sync", wantCatchUp: false, asks: [(100, .nothing)]),
        Row(name: "a catch-up goes to a reachable member, one at a time", asks: [(100, .start("c", requestID: 1)), (200, .nothing)]),
        Row(name: "a member without a link is not asked", linked: ["b"], asks: [(100, .start("b", requestID: 1))]),
        Row(name: "no member linked: the catch-up waits, and says so after its patience, naming the members",
            linked: [], asks: [(100, .nothing), (3_200, .nothing)]),
        Row(name: "sync links down: it waits, and says so after its patience", connected: false,
            asks: [(100, .nothing), (2_000, .nothing), (3_200, .waiting("b: unreachable, c: unreachable"))]),
        Row(name: "unheard, but a sync link just came back (a healed partition): reachable", heard: false,
            asks: [(100, .start("b", requestID: 1))]),
        Row(name: "unheard, and the link came back longer ago than the suspicion time: unreachable", heard: false,
            asks: [(1_600, .nothing), (4_700, .waiting("b: unreachable, c: unreachable"))]),
        Row(name: "the intake busy: the catch-up waits without a word", intakeBusy: true, asks: [(100, .nothing), (900, .nothing)]),
    ]

    @Test(arguments: rows) func theSyncToStart(_ row: Row) {
        var core = Self.core(connected: row.connected, heard: row.heard)
        if row.wantCatchUp { core.planner.wantCatchUp(.startUp) }
        if row.intakeBusy { core.intakeBusySince = Clock.start }
        for ask in row.asks {
            let now = Clock.start + .milliseconds(ask.at)
            let decision = core.chooseSync(now: now, base: Self.timing, catchUpPatience: .seconds(3), isLinked: { row.linked.contains($0) })
            switch (decision, ask.expect) {
            case (.start(let choice), .start(let peer, let requestID)):
                #expect(choice.peer == peer && choice.requestID == requestID && choice.reason == .startUp, "at \(ask.at): \(choice)")
                core.syncSent(choice, now: now)
            case (.none(nil), .nothing): break
            case (.none(let message?), .waiting(let words)):
                #expect(message.contains(words), "at \(ask.at): \(message)")
            default:
                Issue.record("at \(ask.at): \(decision), expected \(ask.expect)")
            }
        }
    }

    /// A completed catch-up covers the other members' streams by its member's reports, but not
    /// what this node dropped itself (a full disk): only that member's own sync clears it. A
    /// report within what the member showed cannot be told from a lie (seeds 4873 and 6300).
    @Test func aCompletedCatchUpCoversByReportAllButWhatWeDropped() {
        var core = Self.core()
        let (epochB, epochC) = (core.sessions["b"]!.stream.epoch, core.sessions["c"]!.stream.epoch)
        _ = core.sessions["c"]?.updatesReceived(1...9, now: Clock.start + .milliseconds(10))
        core.sessions["c"]?.receivedEntriesDropped()
        #expect(core.sessions["c"]?.heldThrough == 0)
        let report = PeerReport(node: "c", epoch: epochC, through: 9, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
        let fromB = SyncPlanner.InFlight(peer: "b", requestID: 1, reason: .commitFailed, started: Clock.start, lastProgress: Clock.start,
                                         reports: ["c": report], reportsEpoch: epochB)
        core.syncCompleted(fromB, mark: StoreMark(epoch: epochB, serial: 1), sequence: 3, now: Clock.start + .milliseconds(100), base: Self.timing)
        #expect(core.sessions["c"]?.heldThrough == 0, "b's word does not clear what we dropped of c")
        #expect(core.sessions["b"]?.heldThrough == 3)
        let fromC = SyncPlanner.InFlight(peer: "c", requestID: 2, reason: .commitFailed, started: Clock.start, lastProgress: Clock.start)
        core.syncCompleted(fromC, mark: StoreMark(epoch: epochC, serial: 1), sequence: 9, now: Clock.start + .milliseconds(200), base: Self.timing)
        #expect(core.sessions["c"]?.heldThrough == 9, "c's own sync does")
    }
}
