import Foundation
import Testing
@testable import ReplicaCore

/// `IdentityClash`: which members' reports of this node show another process with our id, and
/// when that is over. Records of our id prove nothing (anyone can send one): they are not input.
@Suite struct IdentityClashTests {
    static let start = MonotonicInstant.now
    static func at(_ seconds: Double) -> MonotonicInstant { start + .milliseconds(Int(seconds * 1000)) }
    static let ours: UInt64 = 1_000

    /// A member's report of us: at a time, the life it hears, and whether it hears it directly.
    struct Report: Sendable {
        var at: Double
        var epoch: UInt64
        var directly = true
        var member: NodeID = "m1"
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var reports: [Report]
        /// The tick after them.
        var tickAt: Double
        var clashing: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "reports of our own life are no clash", reports: (0..<20).map { Report(at: Double($0) * 0.5, epoch: ours) },
            tickAt: 10, clashing: false),
        Row(name: "a member that has heard nothing of us (epoch 0) is no clash", reports: (0..<20).map { Report(at: Double($0) * 0.5, epoch: 0) },
            tickAt: 10, clashing: false),
        Row(name: "our previous life, reported for a heartbeat or two after a restart, is no clash",
            reports: [Report(at: 0, epoch: 900), Report(at: 0.5, epoch: 900), Report(at: 1, epoch: ours)], tickAt: 2, clashing: false),
        Row(name: "another life heard only through others (not directly) is no clash",
            reports: (0..<20).map { Report(at: Double($0) * 0.5, epoch: 2_000, directly: false) }, tickAt: 10, clashing: false),
        Row(name: "another life heard directly for the confirmation time is a clash",
            reports: (0...10).map { Report(at: Double($0) * 0.5, epoch: 2_000) }, tickAt: 5, clashing: true),
        Row(name: "an earlier epoch heard directly for as long is one too (a second directory, its clock behind)",
            reports: (0...10).map { Report(at: Double($0) * 0.5, epoch: 500) }, tickAt: 5, clashing: true),
        Row(name: "a member that flips between the two lives still shows it",
            reports: (0...12).map { Report(at: Double($0) * 0.5, epoch: $0 % 2 == 0 ? 2_000 : ours) }, tickAt: 6, clashing: true),
        Row(name: "reports too far apart never confirm", reports: [Report(at: 0, epoch: 2_000), Report(at: 20, epoch: 2_000)],
            tickAt: 21, clashing: false),
        // Simulator seed 73 (pause, crash): each member reported the previous life once after a
        // restart, and a member stopped meanwhile once more, 6 s later, from its backlog.
        Row(name: "one report by each of several members, 6 s apart, is no clash",
            reports: [Report(at: 7, epoch: 900, member: "m2"), Report(at: 7, epoch: 900, member: "m3"),
                      Report(at: 13.1, epoch: 900, member: "m4")],
            tickAt: 13.2, clashing: false),
        Row(name: "a clash ends a window after the last report",
            reports: (0...10).map { Report(at: Double($0) * 0.5, epoch: 2_000) }, tickAt: 15, clashing: false),
        Row(name: "and stands until then", reports: (0...10).map { Report(at: Double($0) * 0.5, epoch: 2_000) }, tickAt: 14.9, clashing: true),
    ]

    @Test(arguments: rows) func judge(_ row: Row) {
        var clash = IdentityClash(window: .seconds(10), confirmAfter: .seconds(5))
        for report in row.reports {
            _ = clash.reported(epoch: report.epoch, hearsDirectly: report.directly, by: report.member, ourEpoch: Self.ours, now: Self.at(report.at))
        }
        _ = clash.tick(now: Self.at(row.tickAt))
        #expect((clash.rival != nil) == row.clashing)
    }

    @Test func itStartsAndEndsOnce() {
        var clash = IdentityClash(window: .seconds(10), confirmAfter: .seconds(5))
        var starts = 0
        for step in 0...20 {
            if clash.reported(epoch: 2_000, hearsDirectly: true, by: "m1", ourEpoch: Self.ours, now: Self.at(Double(step) * 0.5)) { starts += 1 }
        }
        #expect(starts == 1, "starts once")
        #expect(clash.rival?.epoch == 2_000 && clash.rival?.member == "m1")
        let early = clash.tick(now: Self.at(19.9))
        #expect(!early)
        let ended = clash.tick(now: Self.at(20))
        #expect(ended, "ends")
        let later = clash.tick(now: Self.at(30))
        #expect(!later)
        #expect(clash.rival == nil)
    }
}
