import Foundation
import PropertyBased
import Testing
@testable import ReplicaCore

/// Counters and logs are families of LWW entries: whatever order, batching or repetition the
/// entries arrive in, every replica must end with the same counter value, the same element
/// list and the same digest (commutative, associative, idempotent).
@Suite struct FamilyMergeLawTests {
    static let incarnations = (0..<3).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
    static let drinkIDs = (0..<4).map { UUID(uuidString: "10000000-0000-0000-0000-00000000000\($0)")! }
    static let log = Drink.log()

    /// A counter slot entry: slot 0...2, timestamp 0...5, writer node 0...1, total 0...20.
    static let slotEntry = Gen.int(in: 0...(3 * 6 * 2 * 21 - 1)).map { code -> Entry in
        let (slot, time, node, total) = (code % 3, (code / 3) % 6, (code / 18) % 2, code / 36)
        return Entry(
            key: FamilyKey.counterSlot("visits", incarnation: incarnations[slot]),
            version: Version(timestamp: HybridTimestamp(wallMillis: UInt64(time + 1), logical: 0), node: NodeID(rawValue: "n\(node)")!),
            schema: CounterFamily.slotSchema, payload: CounterFamily.payload(total))
    }

    /// A drink element entry: element 0...3, timestamp 0...5, node 0...1, caffeine 0...4 (4: removed).
    static let elementEntry = Gen.int(in: 0...(4 * 6 * 2 * 5 - 1)).map { code -> Entry in
        let (element, time, node, variant) = (code % 4, (code / 4) % 6, (code / 24) % 2, code / 48)
        let id = drinkIDs[element]
        let version = Version(timestamp: HybridTimestamp(wallMillis: UInt64(time + 1), logical: 0), node: NodeID(rawValue: "n\(node)")!)
        if variant == 4 { return Entry(key: log.key(forID: id.uuidString.lowercased()), version: version, schema: log.schema, payload: nil) }
        let drink = Drink(unchecked: id, name: "drink \(variant)", mg: Double(variant * 10), date: Date(timeIntervalSince1970: Double(1000 + element % 2)))
        return try! Entry(key: log.key(forID: id.uuidString.lowercased()), version: version, schema: log.schema, payload: log.put(drink).payload)
    }

    static func store(_ batches: [[Entry]]) -> MemoryStore {
        let store = MemoryStore(node: "x")
        for batch in batches { _ = try? store.merge(batch) }
        return store
    }

    static func counterValue(_ store: MemoryStore) -> Int { CounterFamily.snapshot("visits", entries: store.entries(prefix: FamilyKey.counterPrefix("visits"))).value }
    static func drinks(_ store: MemoryStore) -> [Drink] { log.elements(in: store.entries(prefix: log.prefix)).elements }

    @Test func counterMergeIsCommutativeAssociativeAndIdempotent() async {
        await propertyCheck(count: 200, input: Self.slotEntry.array(of: 0...20), Self.slotEntry.array(of: 0...20)) { a, b in
            let one = Self.store([a, b])                    // a then b
            let other = Self.store([b + a])                 // b and a in one batch
            let third = Self.store(a.map { [$0] } + b.reversed().map { [$0] } + [a, b])  // one by one, reversed, then again
            #expect(Self.counterValue(one) == Self.counterValue(other))
            #expect(Self.counterValue(one) == Self.counterValue(third))
            #expect(one.digest == other.digest && one.digest == third.digest)
            // The value is the sum of each slot's newest total.
            var newest: [String: Entry] = [:]
            for entry in a + b { newest[entry.key] = newest[entry.key].map { Entry.merged($0, entry) } ?? entry }
            #expect(Self.counterValue(one) == newest.values.reduce(0) { $0 + (try! CounterFamily.total(of: $1)) })
        }
    }

    @Test func counterMergeIsAssociative() async {
        await propertyCheck(count: 150, input: Self.slotEntry.array(of: 0...10), Self.slotEntry.array(of: 0...10), Self.slotEntry.array(of: 0...10)) { a, b, c in
            // (a ∪ b) ∪ c, as one store receiving a+b from a peer then c ...
            let left = Self.store([Self.store([a, b]).entries(prefix: ""), c])
            // ... and a ∪ (b ∪ c).
            let right = Self.store([a, Self.store([b, c]).entries(prefix: "")])
            #expect(Self.counterValue(left) == Self.counterValue(right))
            #expect(left.digest == right.digest)
        }
    }

    @Test func logMergeIsCommutativeAssociativeAndIdempotent() async {
        await propertyCheck(count: 200, input: Self.elementEntry.array(of: 0...20), Self.elementEntry.array(of: 0...20), Self.elementEntry.array(of: 0...10)) { a, b, c in
            let one = Self.store([a, b, c])
            let other = Self.store([c + b.reversed(), a])
            let third = Self.store([Self.store([a, b]).entries(prefix: ""), Self.store([c, a]).entries(prefix: ""), b])
            #expect(Self.drinks(one) == Self.drinks(other))
            #expect(Self.drinks(one) == Self.drinks(third))
            #expect(one.digest == other.digest && one.digest == third.digest)
            let sorted = Self.drinks(one)
            #expect(sorted == sorted.sorted { ($0.date, $0.id.uuidString.lowercased()) < ($1.date, $1.id.uuidString.lowercased()) })
        }
    }
}
