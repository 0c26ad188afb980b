import Foundation
@testable import ReplicaCore
import Testing

/// A node whose store may have forgotten stamps its id gave (wiped, restored, unclean) takes its
/// members' heartbeat clocks in until it holds what a member holds, so that its new writes are
/// not stamped below its own earlier ones.
@Suite struct ForgottenStampsTests {
    @Test(arguments: [(true, [true, false]), (false, [false, false])])
    func heartbeatsMoveTheClockOnlyUntilAMembersDataIsHeld(mayHaveForgotten: Bool, expected: [Bool]) {
        var stamps = ForgottenStamps(storeMayHaveForgotten: mayHaveForgotten)
        var seen = [stamps.takesHeartbeatClocks]
        stamps.heldAllOfAMember()
        seen.append(stamps.takesHeartbeatClocks)
        #expect(seen == expected)
    }

    /// helper-88's case: a node writes a key, its data directory is wiped, and it starts again
    /// with a clock 20 s behind (within the drift limit, so nothing flags it) and writes the key
    /// anew. That acknowledged write was stamped below the one from before the wipe, which won
    /// on every node when the two met. Now the new write wins everywhere.
    @Test func aWipedNodesNewWriteIsNotStampedBelowItsOldOne() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-wiped-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: directory) }
        var layout = ReplicaLayout(count: 3, storage: { $0 == 0 ? .directory(directory) : .memory })
        var a = try layout.start(0)
        let (b, c) = (try layout.start(1), try layout.start(2))
        #expect(await connected([a, b, c]))
        try await a.write("k", payload: Array("before the wipe".utf8))
        #expect(try await eventually {
            let (onB, onC) = (try await b.entry(for: "k"), try await c.entry(for: "k"))
            return onB != nil && onC != nil
        })
        let old = try #require(try await b.entry(for: "k")).version
        await a.shutdown()
        try FileManager.default.removeItem(at: directory)

        layout.configurations[0].wallClock = { HybridLogicalClock.systemClock() - 20_000 }
        a = try layout.start(0)
        #expect(await eventually { (try? await a.write("k", payload: Array("after the wipe".utf8))) != nil }, "accepted")
        let new = try #require(try await a.entry(for: "k"))
        #expect(new.version > old, "stamped above the write of its earlier life: \(new.version) against \(old)")
        for replica in [a, b, c] {
            #expect(try await eventually { try await replica.entry(for: "k")?.payload == Array("after the wipe".utf8) })
        }
        for replica in [a, b, c] { await replica.shutdown() }
    }

    /// The same under `requireClockCheck` (operations.md's advice for a restored or wiped
    /// node), with the members holding enough that the catch-up of the old write still runs
    /// when the clock check lets the first write through: that write is stamped above the old
    /// one all the same, since the heartbeat that measured the clock moved it.
    @Test func aWipedNodesWriteDuringItsCatchUpIsNotStampedBelowItsOldOne() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-wiped-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: directory) }
        var layout = ReplicaLayout(count: 2, storage: { $0 == 0 ? .directory(directory) : .memory })
        var a = try layout.start(0)
        let b = try layout.start(1)
        #expect(await connected([a, b]))
        for start in stride(from: 0, to: 60_000, by: 10_000) {
            _ = try await b.write((start..<start + 10_000).map { Replica.WriteRequest(key: "bulk/\($0)", payload: Array("\($0)".utf8)) })
        }
        try await a.write("k", payload: Array("before the wipe".utf8))
        #expect(try await eventually { try await b.entry(for: "k") != nil })
        let old = try #require(try await b.entry(for: "k")).version
        await a.shutdown()
        try FileManager.default.removeItem(at: directory)

        layout.configurations[0].wallClock = { HybridLogicalClock.systemClock() - 20_000 }
        layout.configurations[0].requireClockCheck = true
        a = try layout.start(0)
        #expect(await eventually { (try? await a.write("k", payload: Array("after the wipe".utf8))) != nil }, "accepted")
        let caughtUp = await a.status().entryCount
        let new = try #require(try await a.entry(for: "k"))
        #expect(new.version > old, "stamped above the write of its earlier life: \(new.version) against \(old) (\(caughtUp) entries held)")
        for replica in [a, b] {
            #expect(try await eventually { try await replica.entry(for: "k")?.payload == Array("after the wipe".utf8) })
        }
        for replica in [a, b] { await replica.shutdown() }
    }
}
