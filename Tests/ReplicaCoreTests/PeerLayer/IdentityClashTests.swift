import Foundation
import Testing
@testable import ReplicaCore

/// `IdentityClash`: which records of this node, held by members, show another process with our
/// id, and when that is over.
@Suite struct IdentityClashTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }
    static let ours = MemberRecord(node: "n2", epoch: 100, incarnation: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)),
                                   status: .active, address: Endpoint(host: "127.0.0.1", port: 7002), publicKey: nil)
    static let otherIncarnation = UUID(uuid: (2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2))

    static func record(epoch: UInt64, status: MemberRecord.Status = .active, port: UInt16 = 7002, incarnation: UUID = otherIncarnation) -> MemberRecord {
        MemberRecord(node: "n2", epoch: epoch, incarnation: incarnation, status: status,
                     address: Endpoint(host: "127.0.0.1", port: port), publicKey: nil)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Overriding records, each at a time in seconds.
        var overrides: [(Double, MemberRecord)]
        /// The tick after them.
        var tickAt: Double
        var clashing: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a forget reaching a live node is not a clash", overrides: [(0, record(epoch: 100, status: .forgotten, incarnation: ours.incarnation))],
            tickAt: 1, clashing: false),
        Row(name: "a stale leave is not a clash", overrides: [(0, record(epoch: 100, status: .left, incarnation: ours.incarnation))], tickAt: 1, clashing: false),
        Row(name: "an older life at a higher epoch, once (replaced directory, clock behind), is not a clash",
            overrides: [(0, record(epoch: 150))], tickAt: 1, clashing: false),
        Row(name: "our own earlier life at our address (a restart after a re-assertion) is answered once, not a clash",
            overrides: [(0, record(epoch: 150, incarnation: ours.incarnation))], tickAt: 1, clashing: false),
        Row(name: "a copy of our directory elsewhere (same incarnation, another address) is a clash at once",
            overrides: [(0, record(epoch: 150, port: 7010, incarnation: ours.incarnation))], tickAt: 1, clashing: true),
        Row(name: "another address is a clash at once", overrides: [(0, record(epoch: 150, port: 7010))], tickAt: 1, clashing: true),
        Row(name: "a rival that keeps re-asserting is a clash", overrides: [(0, record(epoch: 150)), (1.5, record(epoch: 152))], tickAt: 2, clashing: true),
        Row(name: "two overrides far apart are not", overrides: [(0, record(epoch: 150)), (30, record(epoch: 300))], tickAt: 31, clashing: false),
        Row(name: "a clash ends a window after the last override", overrides: [(0, record(epoch: 150, port: 7010))], tickAt: 10, clashing: false),
        Row(name: "and stands until then", overrides: [(0, record(epoch: 150, port: 7010)), (5, record(epoch: 160, port: 7010))], tickAt: 14, clashing: true),
    ]

    @Test(arguments: rows) func judge(_ row: Row) {
        var clash = IdentityClash(window: .seconds(10))
        for (time, record) in row.overrides { _ = clash.overridden(by: record, ours: Self.ours, now: Self.at(time)) }
        _ = clash.tick(now: Self.at(row.tickAt))
        #expect((clash.rival != nil) == row.clashing)
    }

    @Test func itStartsAndEndsOnce() {
        var clash = IdentityClash(window: .seconds(10))
        let rival = Self.record(epoch: 150, port: 7010)
        let started = clash.overridden(by: rival, ours: Self.ours, now: Self.at(0))
        #expect(started, "starts")
        let again = clash.overridden(by: rival, ours: Self.ours, now: Self.at(1))
        #expect(!again, "already standing")
        #expect(clash.rival == rival)
        let early = clash.tick(now: Self.at(10.5))
        #expect(!early)
        let ended = clash.tick(now: Self.at(11))
        #expect(ended, "ends")
        let later = clash.tick(now: Self.at(30))
        #expect(!later)
        #expect(clash.rival == nil)
    }
}
