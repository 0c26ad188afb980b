import Foundation
import Testing
@testable import ReplicaCore

/// Whether the core opens a member's links (`NodeCore.dial`, `maintainUnheardDials`), without an
/// actor: members never heard here take one of the places for such members or wait; members
/// heard, departed or not admitted go through.
@Suite struct NodeCoreDialsTests {
    typealias Clock = NodeCoreClockTests
    static func at(_ millis: Int) -> MonotonicInstant { Clock.start + .milliseconds(millis) }

    static func record(_ node: NodeID, status: MemberRecord.Status = .active) -> MemberRecord {
        MemberRecord(node: node, epoch: Clock.wall - 10, incarnation: UUID(), status: status,
                     address: Endpoint(host: "10.0.0.\(node.rawValue.count + 1)", port: 7000), publicKey: nil)
    }

    /// A core with one place for members never heard, taken by `x` at time 0.
    static func core() -> NodeCore {
        var core = Clock.core()
        core.unheardDials = UnheardDials(limit: 1, attempt: .seconds(30), firstBackOff: .seconds(60), maxBackOff: .seconds(960))
        _ = core.dial(record("x"), admitted: true, now: at(0))
        return core
    }

    @Test func aMemberNeverHeardWaitsForAPlaceAndOneDiallingKeepsIt() {
        var core = Self.core()
        #expect(core.dial(Self.record("y"), admitted: true, now: Self.at(100)) == .hangUp("y", unheardFor: nil))
        let x = Self.record("x")
        #expect(core.dial(x, admitted: true, now: Self.at(200)) == .open(x))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var status: MemberRecord.Status = .active
        var admitted = true
        var heard = false
        var opens: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "heard here before: opened whatever the places", heard: true, opens: true),
        Row(name: "departed: goes through (opening closes nothing it should keep)", status: .left, opens: true),
        Row(name: "not admitted: goes through, and opening refuses it", admitted: false, opens: true),
    ]

    @Test(arguments: rows) func dial(_ row: Row) {
        var core = Self.core()
        let record = Self.record("y", status: row.status)
        if row.heard {
            var session = PeerSession(record: record, now: Clock.start)
            _ = session.updatesReceived(1...1, now: Self.at(50))
            core.sessions["y"] = session
        }
        let action = core.dial(record, admitted: row.admitted, now: Self.at(100))
        #expect(action == (row.opens ? .open(record) : .hangUp("y", unheardFor: nil)))
    }

    /// A dial unheard for its attempt hangs up, and its place goes to a member waiting, once its
    /// back-off is over, if it is still active and admitted.
    @Test func aPlaceUnheardTooLongGoesToAMemberWaiting() {
        var core = Self.core()
        for node: NodeID in ["y", "z"] {
            _ = core.membership.merge([Self.record(node)], wallMillis: Clock.wall)
            _ = core.dial(core.membership[node]!, admitted: true, now: Self.at(100))
        }
        #expect(core.maintainUnheardDials(now: Self.at(10_000), admits: { _ in true }).isEmpty)
        let hungUp = core.maintainUnheardDials(now: Self.at(30_000), admits: { $0.node != "y" })
        #expect(hungUp == [.hangUp("x", unheardFor: .seconds(30))], "y, first in line, is no longer admitted: it gives the place up")
        #expect(core.maintainUnheardDials(now: Self.at(30_010), admits: { _ in true }) == [.open(core.membership["z"]!)])
    }
}
