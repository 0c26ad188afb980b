import PropertyBased
import Testing
@testable import ReplicaCore

/// `ShardedTable` answers as one `Dictionary` would, and no shard holds much more than its share,
/// so that a shard's doubling copies a small part of the table.
@Suite struct ShardedTableTests {
    /// An operation on keys "k0" to "k59": write (0), remove (1) or read (2), with the value `code`.
    static let operation = Gen.int(in: 0...(3 * 60 * 50 - 1))

    @Test func answersAsADictionaryDoes() async {
        await propertyCheck(count: 300, input: Self.operation.array(of: 0...300)) { operations in
            var table = ShardedTable<Int>()
            var model: [String: Int] = [:]
            for code in operations {
                let key = "k\(code / 3 % 60)"
                switch code % 3 {
                case 0: #expect(table.updateValue(code, forKey: IndexKey(key)) == model.updateValue(code, forKey: key))
                case 1: #expect(table.removeValue(forKey: IndexKey(key)) == model.removeValue(forKey: key))
                default: #expect(table[IndexKey(key)] == model[key])
                }
                #expect(table.count == model.count && table.isEmpty == model.isEmpty)
            }
            #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key.key, $0.value) }) == model)
            #expect(table.values.sorted() == model.values.sorted())
        }
    }

    /// Thousands of keys, so that every shard holds many, grows and loses some: writes,
    /// overwrites and removals answer as one dictionary's, and iteration sees each key once.
    @Test func everyShardGrowsAndShrinksAsADictionaryWould() {
        var table = ShardedTable<Int>()
        var model: [String: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for step in 0..<60_000 {
            let key = "key\(Int.random(in: 0..<8_000, using: &generator))"
            if step % 5 == 4 {
                #expect(table.removeValue(forKey: IndexKey(key)) == model.removeValue(forKey: key))
            } else {
                #expect(table.updateValue(step, forKey: IndexKey(key)) == model.updateValue(step, forKey: key))
            }
        }
        #expect(table.count == model.count)
        let listed = table.map { ($0.key.key, $0.value) }
        #expect(listed.count == model.count)
        #expect(Dictionary(uniqueKeysWithValues: listed) == model)
        #expect(model.keys.allSatisfy { table[IndexKey($0)] == model[$0] })
    }

    /// Keys that are equal strings but different bytes are two keys, as in the store.
    @Test func canonicallyEqualKeysAreTwoKeys() {
        var table = ShardedTable<Int>()
        table[IndexKey("caf\u{E9}")] = 1
        table[IndexKey("cafe\u{301}")] = 2
        #expect(table.count == 2 && table[IndexKey("caf\u{E9}")] == 1 && table[IndexKey("cafe\u{301}")] == 2)
    }

    /// 200,000 keys of the benchmark's shape spread over the shards: none holds more than 1.5
    /// times its share, so none copies more than that at its doubling.
    @Test func keysSpreadOverTheShards() {
        var table = ShardedTable<Int>()
        let keys = 200_000
        for index in 0..<keys { table[IndexKey("k\(index)")] = index }
        #expect(table.count == keys)
        #expect(table.largestShard <= keys * 3 / 2 / ShardedTable<Int>.shardCount)
    }
}
