import Foundation
import Testing
@testable import ReplicaCore

/// The write-ahead log stays bounded: the policy by table, then a real SQLite file.
@Suite struct WALCheckpointTests {
    static let mebibyte = 1 << 20

    @Test(arguments: [
        // (frames in the log, page size, rewind at bytes, rewinds?)
        (0, 4096, 0, false),  // nothing to copy, whatever the limit
        (0, 4096, mebibyte, false),
        (1, 4096, mebibyte, false),
        (254, 4096, mebibyte, false),  // 254 x (4096 + 24) = 1,046,480 bytes
        (255, 4096, mebibyte, true),  // 255 x 4120 = 1,050,600 bytes: over
        (63, 16384, mebibyte, false),  // 63 x 16,408 = 1,033,704
        (64, 16384, mebibyte, true),
        (32_577, 4096, 128 * mebibyte, false),  // 134,217,240 bytes, 488 short of 128 MiB
        (32_578, 4096, 128 * mebibyte, true),
        (40_000, 4096, 128 * mebibyte, true),
    ])
    func rewindsOnceTheLogIsLong(logFrames: Int, pageSize: Int, limit: Int, rewinds: Bool) {
        let policy = WALCheckpointPolicy(restartAboveBytes: limit)
        #expect(policy.restarts(afterPassiveWithLogFrames: logFrames, pageSize: pageSize) == rewinds)
    }

    /// SQLite cuts the log file back to `journal_size_limit` after a rewind: below the size a
    /// rewind happens at, every rewind cut it, the commits after it allocated its blocks again,
    /// and the p99 at 10,000 saves/s went from 8 to 46-52 ms (64 MiB, 0.26.0 to 0.32.0).
    @Test func theLogFileIsNotCutBelowTheSizeItRewindsAt() {
        #expect(SQLiteStore.logSizeLimitBytes >= 2 * WALCheckpointPolicy().restartAboveBytes)
    }

    @Test func theDefaultRewindsAt128MiB() {
        #expect(WALCheckpointPolicy().restartAboveBytes == 128 * Self.mebibyte)
    }

    @Test(arguments: [
        // (frames in the log now, at the last pass, commits since, ms since it, pass due?)
        (0, 0, 0, 10_000, false),  // nothing written
        (100, 100, 0, 10_000, false),  // unchanged: nothing to copy
        (1, 0, 1, 10, false),  // a little, recently: wait for more
        (254, 0, 3, 10, false),  // 254 x 4,120 = 1,046,480 bytes
        (255, 0, 3, 10, true),  // a megabyte written: at once, so the fsync stays short
        (1_255, 1_000, 9, 0, true),
        (1, 0, 1, 499, false),
        (1, 0, 1, 500, true),  // a trickle: every half second
        (300, 32_000, 40, 10, true),  // rewound since the last pass: all 300 frames are new
        (100, 32_000, 5, 10, false),
        (32_000, 32_000, 1, 500, true),  // a commit that rewrote no new frame count still counts
    ])
    func passesAfterAMegabyteOrHalfASecond(frames: Int, lastFrames: Int, commits: Int, millis: Int, due: Bool) {
        #expect(WALCheckpointPolicy().passDue(
            logFrames: frames, atLastPass: lastFrames, pageSize: 4096, commitsSince: commits, sinceLastPass: .milliseconds(millis)) == due)
    }

    static func entries(_ range: Range<Int>, round: UInt64) -> [Entry] {
        range.map { index in
            Entry(key: "k\(index)", version: Version(timestamp: HybridTimestamp(wallMillis: 1_000 + round, logical: UInt16(index % 1000)), node: "n1"),
                  payload: Array(repeating: UInt8(truncatingIfNeeded: index), count: 2_000))
        }
    }

    /// The checkpointer sleeps until a commit makes a pass due (it polled every 10 ms before):
    /// the commit that grows the log past the limit wakes it at once, long before the period,
    /// and a single small commit brings a pass when the period ends.
    @Test func commitsWakeTheCheckpointerWhenAPassIsDue() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let growth = WALCheckpointPolicy(passAfterGrowthBytes: 256 * 1024, period: .seconds(3_600))
        let store = try SQLiteStore(directory: directory.url.appendingPathComponent("growth"), node: "n1", checkpointPolicy: growth)
        _ = try store.merge(Self.entries(0..<1, round: 0))
        #expect(store.checkpointPasses == 0, "a small commit, and an hour's period: no pass yet")
        _ = try store.merge(Self.entries(0..<200, round: 1))  // 200 entries of 2,000 bytes: over 256 KiB
        #expect(await eventually { store.checkpointPasses == 1 }, "the growing commit woke the checkpointer")

        let trickle = WALCheckpointPolicy(passAfterGrowthBytes: .max, period: .milliseconds(200))
        let other = try SQLiteStore(directory: directory.url.appendingPathComponent("trickle"), node: "n1", checkpointPolicy: trickle)
        _ = try other.merge(Self.entries(0..<1, round: 0))
        #expect(await eventually { other.checkpointPasses == 1 }, "one commit: a pass once the period ends")
    }

    @Test func aLongLogIsRewoundAndWrittenFromItsStartWithNothingLost() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let limit = 256 * 1024
        // The background thread never passes here (no growth or period reaches it): every pass
        // is this test's own, so what each one did is known.
        let quiet = WALCheckpointPolicy(restartAboveBytes: limit, passAfterGrowthBytes: .max, period: .seconds(86_400))
        let store = try SQLiteStore(directory: directory.url, node: "n1", checkpointPolicy: quiet)
        let wal = directory.url.appendingPathComponent(SQLiteStore.fileName + "-wal").path
        func walFileBytes() throws -> Int { try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0 }

        // A short log is only copied. The writer's commits are counted by SQLite's WAL hook.
        let before = store.walProgress.snapshot
        _ = try store.merge(Self.entries(0..<1, round: 0))
        #expect(store.walProgress.snapshot.commits == before.commits + 1)
        #expect(store.walProgress.snapshot.logFrames > before.logFrames)
        #expect(try store.checkpointNow().restarted == false)

        // A long one is copied and rewound: the next commits write over it from the start, so the
        // file does not grow while the same amount is written again, and again.
        _ = try store.merge(Self.entries(0..<200, round: 1))
        let long = try store.checkpointNow()
        #expect(long.logFrames * 4120 >= limit)
        #expect(long.restarted)
        let rewoundSize = try walFileBytes()
        for round in 2...4 as ClosedRange<UInt64> {
            _ = try store.merge(Self.entries(0..<200, round: round))
            #expect(try walFileBytes() <= rewoundSize, "round \(round): the log grew instead of being written from its start")
            #expect(store.walProgress.snapshot.logFrames <= long.logFrames, "round \(round): the hook saw the log start again")
            #expect(try store.checkpointNow().restarted)
        }
        store.closeForWriting()

        let reopened = try SQLiteStore(directory: directory.url, node: "n1")
        #expect(reopened.count == 200)
        #expect(try reopened.entry(for: "k199") == Self.entries(199..<200, round: 4)[0])
    }
}
