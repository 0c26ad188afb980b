import Foundation
import Testing
@testable import ReplicaCore

/// What a change of the member table does (`NodeCore.memberChanged`), without an actor: the
/// session it starts, keeps or drops, the sync it wants, and what the actor is told to do.
@Suite struct NodeCoreMemberChangesTests {
    typealias Clock = NodeCoreClockTests

    static func record(_ node: NodeID, _ status: MemberRecord.Status = .active, host: String = "10.0.0.2") -> MemberRecord {
        MemberRecord(node: node, epoch: Clock.wall - 10, incarnation: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9)),
                     status: status, address: Endpoint(host: host, port: 7000), publicKey: nil)
    }

    enum Kind: String, Sendable { case log, perform, dial, hangUp }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The member `d` has a session before the change.
        var known: Bool
        var change: Membership.Change
        var actions: [Kind]
        var sessionAfter: Bool
        var syncWanted: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a new member: a session, a line, a dial, and one sync once it is up", known: false, change: .joined(record("d")),
            actions: [.log, .dial], sessionAfter: true, syncWanted: true),
        Row(name: "a member back from a departure: its liveness starts over (suspect until heard), then a line and a dial", known: true,
            change: .joined(record("d")), actions: [.perform, .log, .dial], sessionAfter: true, syncWanted: true),
        Row(name: "a restart in place: nothing to do but take the record", known: true, change: .restarted(record("d")),
            actions: [], sessionAfter: true, syncWanted: false),
        Row(name: "a move: a line and a dial of the new address", known: true, change: .moved(record("d", host: "10.0.0.5")),
            actions: [.log, .dial], sessionAfter: true, syncWanted: false),
        Row(name: "a member that left: a line, its liveness left, hung up on; its session stays for its stream", known: true,
            change: .left(record("d", .left)), actions: [.log, .perform, .hangUp], sessionAfter: true, syncWanted: false),
        Row(name: "a member forgotten: a line, hung up on, its session gone", known: true, change: .forgotten(record("d", .forgotten)),
            actions: [.log, .hangUp], sessionAfter: false, syncWanted: false),
        Row(name: "a departure expired: removed", known: true, change: .expired(record("d", .left)),
            actions: [.log, .hangUp], sessionAfter: false, syncWanted: false),
    ]

    @Test(arguments: rows) func whatAChangeDoes(_ row: Row) {
        var core = Clock.core()
        if row.known {
            var session = PeerSession(record: Self.record("d"), now: Clock.start)
            session.dealerTCPConnected(now: Clock.start)
            if case .joined = row.change { _ = session.recordChanged(Self.record("d", .left), now: Clock.start) }
            core.sessions["d"] = session
        }
        let actions = core.memberChanged(row.change, now: Clock.start + .seconds(1), trust: KeyTrust(curve: nil), storeSerial: 1,
                                         retention: .seconds(3600))
        let kinds: [Kind] = actions.map {
            switch $0 {
            case .log: .log
            case .perform: .perform
            case .dial: .dial
            case .hangUp: .hangUp
            }
        }
        #expect(kinds == row.actions, "\(actions)")
        #expect((core.sessions["d"] != nil) == row.sessionAfter)
        #expect(core.planner.wanted["d"] == (row.syncWanted ? .memberJoined : nil))
    }

    /// A member heard once stays a real node for the unheard dials, whatever a record not its
    /// own does to its session; until its departure expires.
    @Test func aMemberHeardOnceIsNotAStrangerAfterAForgetButIsAfterItsExpiry() {
        var core = Clock.core()
        var session = PeerSession(record: Self.record("d"), now: Clock.start)
        _ = session.heardDirectly(now: Clock.start)
        core.sessions["d"] = session
        _ = core.memberChanged(.forgotten(Self.record("d", .forgotten)), now: Clock.start, trust: KeyTrust(curve: nil), storeSerial: 1, retention: .seconds(3600))
        #expect(core.unheardDials.heardOnce.contains("d"))
        _ = core.memberChanged(.expired(Self.record("d", .forgotten)), now: Clock.start, trust: KeyTrust(curve: nil), storeSerial: 1, retention: .seconds(3600))
        #expect(!core.unheardDials.heardOnce.contains("d"))
    }
}
