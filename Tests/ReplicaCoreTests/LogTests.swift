import Foundation
import Testing
@testable import ReplicaCore

@Suite struct LogTests {
    @Test func concurrentAddsOnBothReplicasAllSurvive() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let sharedA = Shared(wrappedValue: [], .drinks(on: replicas[0]))
        let sharedB = Shared(wrappedValue: [], .drinks(on: replicas[1]))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for i in 0..<15 { sharedA.withLock { $0.append(try! Drink(name: "A\(i)", mg: 10, date: Date(timeIntervalSince1970: Double(i * 2)))) } } }
            group.addTask { for i in 0..<15 { sharedB.withLock { $0.append(try! Drink(name: "B\(i)", mg: 20, date: Date(timeIntervalSince1970: Double(i * 2 + 1)))) } } }
        }
        try await sharedA.save()
        try await sharedB.save()
        #expect(await eventually { sharedA.wrappedValue.count == 30 && sharedB.wrappedValue.count == 30 })
        let (onA, onB) = (sharedA.wrappedValue, sharedB.wrappedValue)
        #expect(onA == onB)
        #expect(onA.map(\.date) == onA.map(\.date).sorted())
        #expect(try await replicas[0].keys(prefix: Drink.log().prefix).count == 30)
    }

    @Test func additionsMadeWhilePartitionedAllSurvive() async throws {
        let layout = ReplicaLayout(count: 2)
        let a = try layout.start(0)
        var b = try layout.start(1)
        #expect(await connected([a, b]))
        @Shared(.drinks(on: a)) var onA: [Drink] = []
        await b.shutdown()
        $onA.withLock { $0.append(try! Drink(name: "while apart on A", mg: 5)) }
        try await $onA.save()
        b = try layout.start(1)
        try await b.write([Drink.log().put(try Drink(name: "while apart on B", mg: 6))])
        #expect(await eventually { Set(onA.map(\.name)) == ["while apart on A", "while apart on B"] })
    }

    @Test func aRemovalWinsOverTheVersionsItSaw() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.drinks(on: replicas[0])) var onA: [Drink] = []
        @Shared(.drinks(on: replicas[1])) var onB: [Drink] = []
        let drink = try Drink(name: "Latte", mg: 75)
        $onA.withLock { $0.append(drink) }
        try await $onA.save()
        let arrived = await eventually { onB == [drink] }
        let storedOnB = try await replicas[1].entries(prefix: Drink.log().prefix)
        let countersOnB = await replicas[1].status().counters
        #expect(arrived, "B shows \(onB), has \(storedOnB.count) entries, \(countersOnB)")
        $onA.withLock { $0[0].mg = 80 }  // an edit B then sees ...
        try await $onA.save()
        #expect(await eventually { onB.first?.mg == 80 })
        $onB.withLock { $0.removeAll() }  // ... and removes
        try await $onB.save()
        #expect(await eventually { onA.isEmpty && onB.isEmpty })
        let key = Drink.log().key(forID: drink.id.uuidString.lowercased())
        #expect(try await replicas[0].entry(for: key)?.isTombstone == true)
        #expect(await eventually { await replicas[0].status().digest == replicas[1].status().digest })
    }

    @Test func drinksAreOrderedByDateThenIDWhateverTheArrivalOrder() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let when = date("2024-05-01T08:30:00Z")
        let ids = ["c0000000-0000-0000-0000-000000000000", "a0000000-0000-0000-0000-000000000000", "b0000000-0000-0000-0000-000000000000"]
            .map { UUID(uuidString: $0)! }
        let tied = try ids.map { try Drink(id: $0, name: "tie", mg: 1, date: when) }
        let earlier = try Drink(name: "earlier", mg: 1, date: when - 60)
        @Shared(.drinks(on: replicas[0])) var onA: [Drink] = []
        @Shared(.drinks(on: replicas[1])) var onB: [Drink] = []
        $onA.withLock { $0 = [tied[0], tied[2]] }
        try await $onA.save()
        $onB.withLock { $0.append(tied[1]); $0.append(earlier) }
        try await $onB.save()
        let expected = [earlier.id, ids[1], ids[2], ids[0]]
        #expect(await eventually { onA.map(\.id) == expected && onB.map(\.id) == expected })
    }

    @Test func aSaveWritesOnlyWhatChanged() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.drinks(on: replica)) var drinks: [Drink] = []
        $drinks.withLock { for i in 0..<5 { $0.append(try! Drink(name: "d\(i)", mg: Double(i))) } }
        try await $drinks.save()
        let before = await replica.status().counters.updatesPublished
        $drinks.withLock { $0.append(try! Drink(name: "one more", mg: 1)); $0[0].name = "renamed"; $0.remove(at: 1) }
        try await $drinks.save()
        #expect(await replica.status().counters.updatesPublished - before == 3, "one add, one change, one removal")
    }

    @Test func aRemoteChangeDoesNotUndoAnUnsavedLocalEdit() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.drinks(on: replicas[0])) var onA: [Drink] = []
        let drink = try Drink(name: "Tea", mg: 30)
        $onA.withLock { $0 = [drink] }
        try await $onA.save()
        @Shared(.drinks(on: replicas[1])) var onB: [Drink] = []
        #expect(await eventually { onB.count == 1 })
        $onA.withLock { $0[0].name = "Green tea" }  // local edit on A ...
        try await replicas[1].write([Drink.log().put(try Drink(id: drink.id, name: "Black tea", mg: 40))])  // ... and a concurrent one on B
        let other = try Drink(name: "Water", mg: 0)
        try await replicas[1].write([Drink.log().put(other)])
        #expect(await eventually { onA.contains(other) })
        try await $onA.save()
        // Both edits were concurrent; LWW picks one and both replicas agree on it.
        #expect(await eventually { onA == onB && onA.count == 2 })
    }

    @Test func expiredTombstonesAreCollectedAndNotTakenBack() async throws {
        var configurations = ReplicaLayout(count: 2, configure: { $0.tombstoneRetention = .milliseconds(300) })
        configurations.configurations[1].tombstoneRetention = .seconds(3600)  // B keeps them
        let (a, b) = (try configurations.start(0), try configurations.start(1))
        #expect(await connected([a, b]))
        let drink = try Drink(name: "Mocha", mg: 90)
        let log = Drink.log()
        try await a.write([log.put(drink)])
        try await a.write([log.removal(ofID: log.id(of: drink))])
        let key = log.key(forID: log.id(of: drink))
        #expect(try await eventually { try await b.entry(for: key)?.isTombstone == true })
        // Collected once its 300 ms retention has passed (and not before: the first sweeps find nothing).
        #expect(await eventually { await a.collectTombstones() == 1 })
        #expect(try await a.entry(for: key) == nil)
        // B still has it and offers it on every sync; A does not take it back.
        await b.collectTombstones()
        #expect(try await b.entry(for: key)?.isTombstone == true)
        #expect(await eventually { await a.status().counters.expiredTombstonesDropped > 0 })
        #expect(try await a.entry(for: key) == nil)
        #expect(await a.status().counters.tombstonesCollected == 1)
        await a.shutdown()
        await b.shutdown()
    }
}
