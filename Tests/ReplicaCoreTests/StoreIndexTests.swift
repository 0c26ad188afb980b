import PropertyBased
import Testing
@testable import ReplicaCore

/// The index compares and records a batch in one pass (`apply`) and must be able to forget it
/// exactly (`undo`) when the store's commit fails: everything a peer reads from it (digest, keys
/// per bucket, serial, versions, counts) goes back to what it was.
@Suite struct StoreIndexTests {
    /// Five keys, three of them in one digest bucket: undoing new keys must take each out of its
    /// bucket's list without disturbing the others there.
    static let keys: [String] = {
        let bucket = StoreDigest.bucket(of: "s0")
        var shared = ["s0"]
        var candidate = 1
        while shared.count < 3 {
            if StoreDigest.bucket(of: "s\(candidate)") == bucket { shared.append("s\(candidate)") }
            candidate += 1
        }
        return shared + ["t0", "t1"]
    }()
    /// Entries over those keys with few timestamps, nodes and payloads: repeats within a batch,
    /// version ties and tombstones are common (see `MergeLawTests.decode`).
    static let keyed = Gen.int(in: 0...239).map { MergeLawTests.decode($0 % 48, key: keys[$0 / 48]) }

    /// What a peer can observe of an index.
    struct Snapshot: Equatable {
        /// The digest's root (one number, so that a failure prints readably).
        var digestRoot: UInt64
        var count: Int
        var liveCount: Int
        var serial: UInt64
        var highestTimestamp: HybridTimestamp
        var bucketKeys: [String]
        var versions: [Version?]

        init(_ index: StoreIndex) {
            digestRoot = index.digest.root
            count = index.count
            liveCount = index.liveCount
            serial = index.serial
            highestTimestamp = index.highestTimestamp
            bucketKeys = index.keys(inBuckets: Array(0..<StoreDigest.bucketCount))
            versions = StoreIndexTests.keys.map { index.version(of: $0) }
        }
    }

    /// An index and the entries it stands for, kept as a store would keep them.
    struct Model {
        var index = StoreIndex()
        var stored: [String: Entry] = [:]

        /// Entries held since before this process started (serial 0), one per key as a
        /// database holds them.
        mutating func load(_ entries: [Entry]) {
            for entry in entries where stored[entry.key].map({ entry.supersedes($0) }) ?? true { stored[entry.key] = entry }
            for entry in stored.values { index.record(entry) }
        }

        mutating func merge(_ batch: [Entry]) -> [Entry] {
            let stored = stored
            let winners = index.apply(batch) { stored[$0] }.entries
            for entry in winners { self.stored[entry.key] = entry }
            return winners
        }
    }

    @Test func undoingABatchLeavesTheIndexAsItWas() async {
        await propertyCheck(
            count: 300, input: Self.keyed.array(of: 0...6), Self.keyed.array(of: 0...20), Self.keyed.array(of: 0...20)
        ) { loaded, before, batch in
            var model = Model()
            model.load(loaded)
            _ = model.merge(before)
            let snapshot = Snapshot(model.index)
            let stored = model.stored
            let applied = model.index.apply(batch) { stored[$0] }
            model.index.undo(applied)
            #expect(Snapshot(model.index) == snapshot)
            // And the index still works: the batch applied again gives the same as a fresh one.
            var fresh = Model()
            fresh.load(loaded)
            _ = fresh.merge(before)
            #expect(model.merge(batch) == fresh.merge(batch))
            #expect(Snapshot(model.index) == Snapshot(fresh.index))
        }
    }

    /// One pass over a batch, repeats of a key included, decides as merging its entries one at a
    /// time would: same winners stored, same digest.
    @Test func aBatchDecidesAsItsEntriesOneAtATime() async {
        await propertyCheck(count: 300, input: Self.keyed.array(of: 0...20), Self.keyed.array(of: 0...30)) { before, batch in
            var whole = Model()
            _ = whole.merge(before)
            var single = Model()
            _ = single.merge(before)
            let winners = whole.merge(batch)
            for entry in batch { _ = single.merge([entry]) }
            #expect(whole.stored == single.stored)
            #expect(whole.index.digest == single.index.digest)
            #expect(Set(winners.map(\.key)).count == winners.count, "one winner per key")
            #expect(whole.index.serial == (before.isEmpty ? 0 : 1) + (winners.isEmpty ? 0 : 1))
        }
    }

    /// The winners come with their hashed keys, one to one (a store keyed by `IndexKey` stores
    /// each winner under its key), and a batch in which every entry won is handed back as it came.
    @Test func winnersComeWithTheirKeys() async {
        await propertyCheck(count: 300, input: Self.keyed.array(of: 0...20), Self.keyed.array(of: 0...30)) { before, batch in
            var model = Model()
            _ = model.merge(before)
            let stored = model.stored
            let applied = model.index.apply(batch) { stored[$0] }
            // By bytes: `String`'s == takes canonically equal keys for one.
            #expect(applied.keys.map { Array($0.key.utf8) } == applied.entries.map { Array($0.key.utf8) })
            if applied.entries.count == batch.count {
                #expect(applied.entries.map { Array($0.key.utf8) } == batch.map { Array($0.key.utf8) })
                #expect(applied.entries == batch)
            }
        }
    }

    @Test func aBatchOfNewKeysIsHandedBackWhole() {
        var index = StoreIndex()
        let batch = (0..<5).map { SQLiteStoreTests.entry("k\($0)", 1) }
        let applied = index.apply(batch) { _ in nil }
        #expect(applied.entries == batch)
        #expect(applied.keys.map(\.key) == batch.map(\.key))
    }

    struct TieReadFailed: Error {}

    /// A version tie reads the stored entry; when that read fails, nothing of the batch stays
    /// recorded, not even the keys decided before it.
    @Test func aFailedTieReadLeavesNothingRecorded() throws {
        var model = Model()
        let held = SQLiteStoreTests.entry("key1", 5)
        _ = model.merge([held])
        let snapshot = Snapshot(model.index)
        let batch = [SQLiteStoreTests.entry("key0", 9), SQLiteStoreTests.entry("key1", 5, "n1", "2")]
        #expect(throws: TieReadFailed.self) {
            _ = try model.index.apply(batch) { _ in throw TieReadFailed() }
        }
        #expect(Snapshot(model.index) == snapshot)
    }

    /// Versions are ordered by timestamp, then node id in byte order; the index keeps node ids as
    /// numbers in the order it first saw them, which must not leak into the comparison.
    @Test func nodeNumbersDoNotOrderVersions() {
        var model = Model()
        _ = model.merge([SQLiteStoreTests.entry("k", 1, "zeta"), SQLiteStoreTests.entry("other", 1, "alpha")])
        #expect(model.merge([SQLiteStoreTests.entry("k", 1, "alpha")]).isEmpty, "alpha < zeta at one timestamp")
        #expect(model.merge([SQLiteStoreTests.entry("other", 1, "zeta")]).count == 1)
        #expect(model.index.version(of: "other")?.node == "zeta")
    }
}
