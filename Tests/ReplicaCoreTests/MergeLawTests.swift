import PropertyBased
import Testing
@testable import ReplicaCore

/// Last-writer-wins merge must be commutative, associative and idempotent, or replicas that
/// receive the same entries in different orders (or twice) would diverge.
@Suite struct MergeLawTests {
    /// Entries for one key with few distinct timestamps, nodes, schemas and payloads, so that
    /// ties, tombstones and equal versions with different payloads or schemas all occur often.
    /// (Two tombstones of one version and different schemas stayed apart for ever, each node
    /// keeping its own, until the schema decided between them too.)
    static let entry = Gen.int(in: 0...95).map { Self.decode($0) }

    /// Spreads one number over (timestamp 0...3, node 0...2, value 0...3, schema 0...1; value 0
    /// is a tombstone).
    static func decode(_ code: Int, key: String = "k") -> Entry {
        let (time, node, value, schema) = (code % 4, (code / 4) % 3, (code / 12) % 4, code / 48)
        return Entry(
            key: key,
            version: Version(timestamp: HybridTimestamp(wallMillis: UInt64(time), logical: 0), node: NodeID(rawValue: "n\(node)")!),
            schema: UInt16(schema), payload: value == 0 ? nil : [UInt8(value)])
    }

    @Test func mergeIsCommutative() async {
        await propertyCheck(count: 300, input: Self.entry, Self.entry) { a, b in
            #expect(Entry.merged(a, b) == Entry.merged(b, a))
        }
    }

    @Test func mergeIsAssociative() async {
        await propertyCheck(count: 300, input: Self.entry, Self.entry, Self.entry) { a, b, c in
            #expect(Entry.merged(Entry.merged(a, b), c) == Entry.merged(a, Entry.merged(b, c)))
        }
    }

    @Test func mergeIsIdempotent() async {
        await propertyCheck(count: 100, input: Self.entry, Self.entry) { a, b in
            #expect(Entry.merged(a, a) == a)
            #expect(Entry.merged(Entry.merged(a, b), b) == Entry.merged(a, b))
        }
    }

    /// The same entries applied to two stores in different orders and batchings, with
    /// duplicates, leave equal contents and equal digests.
    @Test func storesConvergeWhateverTheOrder() async {
        let keyed = Gen.int(in: 0...479).map { Self.decode($0 % 96, key: "key\($0 / 96)") }
        await propertyCheck(count: 200, input: keyed.array(of: 0...30)) { entries in
            let forward = MemoryStore(node: "a")
            for entry in entries { _ = try? forward.merge([entry]) }
            let backward = MemoryStore(node: "b")
            _ = try? backward.merge(entries.reversed() + entries)
            #expect(forward.digest == backward.digest)
            for key in 0...4 {
                #expect(forward.entry(for: "key\(key)") == backward.entry(for: "key\(key)"))
            }
        }
    }
}
