import Foundation
@testable import ReplicaCore
import Testing

/// A node back from longer out of contact than the tombstone retention tells it (`absence`):
/// deletes its members collected meanwhile may come back from its data.
@Suite struct AbsenceTests {
    static let day: UInt64 = 86_400_000
    static let week = 7 * day

    /// A look at the clock check: in contact at a wall time (and what that calls for), or not.
    enum Look: Sendable {
        case contact(UInt64, AbsenceCheck.Action)
        case lost
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The last contact saved in the store at start.
        var saved: UInt64?
        var looks: [Look]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a store's first contact is saved at once, then once a minute", saved: nil, looks: [
            .contact(1_000, .save(wallMillis: 1_000)),
            .contact(30_000, .none),
            .contact(61_000, .save(wallMillis: 61_000)),
            .contact(61_500, .none),
        ]),
        Row(name: "back after a day: saved, not told", saved: 5_000, looks: [
            .contact(5_000 + day, .save(wallMillis: 5_000 + day)),
        ]),
        Row(name: "back after exactly the retention: not told", saved: 5_000, looks: [
            .contact(5_000 + week, .save(wallMillis: 5_000 + week)),
        ]),
        Row(name: "back after longer than the retention: told once, from the last contact", saved: 5_000, looks: [
            .contact(5_001 + week, .returned(since: 5_000, until: 5_001 + week)),
            .contact(6_000 + week, .none),
        ]),
        Row(name: "out of contact while running (a partition): judged from the last contact, saved or not", saved: nil, looks: [
            .contact(1_000, .save(wallMillis: 1_000)),
            .contact(40_000, .none),
            .lost,
            .contact(40_000 + week + 1, .returned(since: 40_000, until: 40_000 + week + 1)),
        ]),
        Row(name: "within one stretch of contact, a long time between looks is no absence (a stall of this node)", saved: nil, looks: [
            .contact(1_000, .save(wallMillis: 1_000)),
            .contact(1_000 + week + 1, .save(wallMillis: 1_000 + week + 1)),
        ]),
        Row(name: "a clock earlier than the saved contact (within the drift limit) moves nothing", saved: 10_000, looks: [
            .contact(9_000, .none),
            .lost,
            .contact(10_000 + week + 1, .returned(since: 10_000, until: 10_000 + week + 1)),
        ]),
    ]

    @Test(arguments: rows) func contacts(_ row: Row) {
        var check = AbsenceCheck(retentionMillis: Self.week, lastContact: row.saved)
        for (index, look) in row.looks.enumerated() {
            switch look {
            case .contact(let at, let action): #expect(check.contact(atWallMillis: at) == action, "look \(index), at \(at)")
            case .lost: check.contactLost()
            }
        }
    }

    /// A retention of zero (the setting is public) tells each return once, not every turn.
    @Test func aRetentionOfZeroTellsAReturnOncePerStretch() {
        var check = AbsenceCheck(retentionMillis: 0, lastContact: 1_000)
        #expect(check.contact(atWallMillis: 1_100) == .returned(since: 1_000, until: 1_100))
        #expect((1...100).allSatisfy { check.contact(atWallMillis: 1_100 + $0) == .none })
    }

    /// What a clean stop saves: the last contact if the periodic save has not covered it.
    @Test func aCleanStopSavesTheLastContact() {
        var check = AbsenceCheck(retentionMillis: Self.week, lastContact: nil)
        _ = check.contact(atWallMillis: 1_000)
        #expect(check.unsaved == nil)
        _ = check.contact(atWallMillis: 2_000)
        #expect(check.unsaved == 2_000)
        check.markSaved(2_000)
        #expect(check.unsaved == nil)
    }

    @Test func spansAreSpokenInTheirTwoLargestUnits() {
        #expect(Replica.spokenSpan(9 * Self.day + 2 * 3_600_000 + 5_000) == "9 d 2 h")
        #expect(Replica.spokenSpan(Self.week) == "7 d")
        #expect(Replica.spokenSpan(3 * 3_600_000 + 5 * 60_000) == "3 h 5 min")
        #expect(Replica.spokenSpan(42_500) == "42 s")
        #expect(Replica.spokenSpan(300) == "300 ms")
    }

    /// The hazard itself, on real sockets and a real SQLite file: a node stopped while a key is
    /// deleted, and started again once its members collected the tombstone, brings the key back
    /// (docs/sharing.md, "Tombstone retention"), and now says so. (A 2 s retention stands for
    /// the 7 days.)
    @Test func aNodeBackFromLongerThanTheRetentionTellsIt() async throws {
        let directory = temporaryDirectory("replica-absence")
        defer { try? FileManager.default.removeItem(at: directory) }
        let layout = ReplicaLayout(count: 3, firstIn: directory) {
            $0.tombstoneRetention = .seconds(2)
            $0.tombstoneSweepInterval = .milliseconds(200)
        }
        var a = try layout.start(0)
        let (b, c) = (try layout.start(1), try layout.start(2))
        #expect(await connected([a, b, c]))
        try await a.write("k", payload: Array("1".utf8))
        #expect(try await eventually {
            let (onB, onC) = (try await b.entry(for: "k"), try await c.entry(for: "k"))
            return onB != nil && onC != nil
        })
        #expect(await eventually { await a.status().clock.verdict == "agrees" }, "in contact: saved")
        await a.shutdown()

        try await b.write("k", payload: nil)
        #expect(await eventually {
            let (onB, onC) = (await b.status().counters.tombstonesCollected, await c.status().counters.tombstonesCollected)
            return onB >= 1 && onC >= 1
        }, "the members collected the tombstone once the retention passed")
        #expect(try await b.entry(for: "k") == nil)

        a = try layout.start(0)
        #expect(await eventually { await a.status().problems.contains { $0.kind == .absence } }, "the return is told")
        let problem = try #require(await a.status().problems.first { $0.kind == .absence })
        #expect(problem.subject == "r1" && problem.message.contains("longer than the tombstone retention (2 s)"), "\(problem.message)")
        #expect(await a.health().healthy, "told, not failing health: the node serves")
        // What it warns of: the deleted key is back on the members.
        #expect(try await eventually { try await b.entry(for: "k")?.isTombstone == false })
        for replica in [a, b, c] { await replica.shutdown() }
    }
}
