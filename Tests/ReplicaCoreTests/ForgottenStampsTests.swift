import Foundation
@testable import ReplicaCore
import Testing

/// A node whose store may have forgotten stamps its id gave (wiped, restored, unclean) takes its
/// members' heartbeat clocks (and their median clock) in until it has taken one of every active
/// member, so that its new writes are not stamped below its own earlier ones.
@Suite struct ForgottenStampsTests {
    @Test func aStoreThatKeptItsStampsTakesNoHeartbeatClock() {
        let stamps = ForgottenStamps(storeMayHaveForgotten: false)
        #expect(!stamps.takes(HybridTimestamp(wallMillis: 1_000, logical: 1)))
    }

    /// Which heartbeat timestamps are taken, and when it ends: once one of every active member
    /// was taken (not at the first member, which may never have had the old write), and not
    /// while no member is known yet.
    @Test func heartbeatClocksAreTakenUntilOneOfEveryActiveMemberWas() {
        var stamps = ForgottenStamps(storeMayHaveForgotten: true)
        #expect(stamps.takes(HybridTimestamp(wallMillis: 1_000, logical: 1)))
        #expect(!stamps.takes(HybridTimestamp(wallMillis: 1_000, logical: 0)), "a member before 0.30.0 may send its wall clock")
        stamps.settle(active: [])
        #expect(stamps.takesHeartbeatClocks, "only seeds yet")
        stamps.took(from: "a")
        stamps.settle(active: ["a", "b"])
        #expect(stamps.takesHeartbeatClocks, "b not taken yet")
        stamps.refusedTimestamp(HybridTimestamp(wallMillis: 9_000, logical: 1), from: "b")
        stamps.refusedTimestamp(HybridTimestamp(wallMillis: 8_000, logical: 1), from: "b")
        #expect(stamps.refused == ["b": HybridTimestamp(wallMillis: 9_000, logical: 1)], "the highest refused is kept")
        stamps.took(from: "b")
        #expect(stamps.refused.isEmpty)
        stamps.settle(active: ["a", "b"])
        #expect(!stamps.takesHeartbeatClocks)
    }

    /// helper-88's case: a node writes a key, its data directory is wiped, and it starts again
    /// with a clock 20 s behind (within the drift limit, so nothing flags it) and writes the key
    /// anew. That acknowledged write was stamped below the one from before the wipe, which won
    /// on every node when the two met. The new write wins everywhere. (Here, connected, the
    /// catch-up usually brings the old write before the clock check lets the new one through,
    /// and this passed before the fix too; `wiped-behind` in Tests/cluster, a write during a slow
    /// catch-up, fails without it.)
    @Test func aWipedNodesNewWriteIsNotStampedBelowItsOldOne() async throws {
        let directory = temporaryDirectory("replica-wiped")
        defer { try? FileManager.default.removeItem(at: directory) }
        var layout = ReplicaLayout(count: 3, firstIn: directory)
        let (w, b, c) = (try layout.start(0), try layout.start(1), try layout.start(2))
        #expect(await connected([w, b, c]))
        let old = try await Self.writeAndWipe(w, directory: directory, seenBy: b)
        let restarted = try await Self.restartWipedAndWrite(&layout, behindMillis: 20_000, requiringCheck: false, above: old)
        try await Self.expectTheNewWrite(on: [restarted, b, c])
    }

    /// A wiped node 50 s behind, whose members' clocks are all beyond the drift its clock
    /// accepts before its first verdict (one member runs 15 s ahead and writes, so every member's
    /// clock is there): the heartbeat timestamps it refused are taken again once the clock check
    /// allows a clock that far behind, before its held writes go out (helper-91). Its new write
    /// is stamped above the one of its earlier life. (As in the test above, the catch-up
    /// usually brings the old write first here, and this passed with the retake disabled too:
    /// the retake's decisions are in the table above, and this proves its wiring does no harm.)
    @Test func refusedHeartbeatClocksAreTakenOnceTheClockIsJudged() async throws {
        let directory = temporaryDirectory("replica-wiped")
        defer { try? FileManager.default.removeItem(at: directory) }
        var layout = ReplicaLayout(count: 3, firstIn: directory)
        layout.configurations[1].wallClock = { HybridLogicalClock.systemClock() + 15_000 }
        let (w, ahead, b) = (try layout.start(0), try layout.start(1), try layout.start(2))
        #expect(await connected([w, ahead, b]))
        #expect(await eventually { (try? await ahead.write("x", payload: Array("1".utf8))) != nil })
        #expect(try await eventually { try await b.entry(for: "x") != nil })
        let old = try await Self.writeAndWipe(w, directory: directory, seenBy: b)
        let restarted = try await Self.restartWipedAndWrite(&layout, behindMillis: 50_000, requiringCheck: true, above: old)
        try await Self.expectTheNewWrite(on: [restarted, ahead, b])
    }

    /// helper-90's case: the member a wiped node reaches never had its old write (it was down
    /// then), and the member that holds it is down now. The new write is stamped no lower than
    /// the members' median clock, so above the old write made a moment before by a clock that
    /// agreed with theirs. (It was stamped from the node's own clock, 20 s behind, and the old
    /// write won once the member holding it returned.)
    @Test func aWipedNodeStampsNoLowerThanItsMembersMedianClock() async throws {
        let directory = temporaryDirectory("replica-wiped")
        defer { try? FileManager.default.removeItem(at: directory) }
        var layout = ReplicaLayout(count: 3, firstIn: directory)
        let (w, holder) = (try layout.start(0), try layout.start(1))
        #expect(await connected([w, holder]))
        let old = try await Self.writeAndWipe(w, directory: directory, seenBy: holder)
        await holder.shutdown()

        let other = try layout.start(2)  // never had k
        let restarted = try await Self.restartWipedAndWrite(&layout, behindMillis: 20_000, requiringCheck: true, above: old)
        for replica in [restarted, other] { await replica.shutdown() }
    }

    /// Writes "k" on `w` (replica 0), waits until `holder` has it, then stops `w` and wipes its
    /// data directory; returns the version of that write.
    static func writeAndWipe(_ w: Replica, directory: URL, seenBy holder: Replica) async throws -> Version {
        try await w.write("k", payload: Array("before the wipe".utf8))
        #expect(try await eventually { try await holder.entry(for: "k") != nil })
        let old = try #require(try await holder.entry(for: "k")).version
        await w.shutdown()
        try FileManager.default.removeItem(at: directory)
        return old
    }

    /// Starts replica 0 again (its directory wiped) with its clock `behindMillis` behind (and
    /// `requireClockCheck` if `requiringCheck`), writes "k" as soon as it may, and checks that
    /// the write is stamped above `old`, the write of its earlier life.
    static func restartWipedAndWrite(
        _ layout: inout ReplicaLayout, behindMillis: UInt64, requiringCheck: Bool, above old: Version
    ) async throws -> Replica {
        layout.configurations[0].wallClock = { HybridLogicalClock.systemClock() - behindMillis }
        layout.configurations[0].requireClockCheck = requiringCheck
        let w = try layout.start(0)
        #expect(await eventually { (try? await w.write("k", payload: Array("after the wipe".utf8))) != nil }, "accepted")
        let new = try #require(try await w.entry(for: "k"))
        #expect(new.version > old, "stamped above the write of its earlier life: \(new.version) against \(old)")
        return w
    }

    /// Every replica ends with the write made after the wipe; then all stop.
    static func expectTheNewWrite(on replicas: [Replica]) async throws {
        for replica in replicas {
            #expect(try await eventually { try await replica.entry(for: "k")?.payload == Array("after the wipe".utf8) })
        }
        for replica in replicas { await replica.shutdown() }
    }
}
