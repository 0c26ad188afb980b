import Foundation
import GRDB
import Testing
@testable import ReplicaCore

@Suite struct CounterTests {
    /// Two connected replicas r1 and r2, each on SQLite in a temporary directory of its own
    /// (removed afterwards); `body` may stop, wipe and restart either through the layout.
    func withTwoDurableReplicas(
        _ name: String, _ body: (ReplicaLayout, [TemporaryDirectory], Replica, Replica) async throws -> Void
    ) async throws {
        let directories = [TemporaryDirectory("\(name)-a"), TemporaryDirectory("\(name)-b")]
        defer { directories.forEach { $0.remove() } }
        let layout = ReplicaLayout(count: 2, storage: { .directory(directories[$0].url) })
        let (a, b) = (try layout.start(0), try layout.start(1))
        #expect(await connected([a, b]))
        try await body(layout, directories, a, b)
    }

    /// Two names that Swift's `String` calls equal ("caf\u{E9}" and "cafe\u{301}") are two keys
    /// in the store, so two counters: one's cached total must not count for the other, in the
    /// counter cache or in the memory store.
    @Test func canonicallyEquivalentNamesAreTwoCounters() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.addToCounter("caf\u{E9}", delta: 5)
        try await replica.addToCounter("cafe\u{301}", delta: 1)
        #expect(try await replica.counter("caf\u{E9}").value == 5)
        #expect(try await replica.counter("cafe\u{301}").value == 1)
        try await replica.addToCounter("cafe\u{301}", delta: 1)
        #expect(try await replica.counter("cafe\u{301}").value == 2)
        #expect(try await replica.entry(for: "caf\u{E9}") == nil)
        await replica.shutdown()
    }

    @Test func concurrentIncrementsOnTwoReplicasSumExactly() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let onA = Shared(wrappedValue: 0, .counter("visits", on: replicas[0]))
        let onB = Shared(wrappedValue: 0, .counter("visits", on: replicas[1]))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for _ in 0..<60 { onA.withLock { $0 += 1 }; await Task.yield() } }
            group.addTask { for _ in 0..<40 { onB.withLock { $0 += 2 }; await Task.yield() } }
            group.addTask { for _ in 0..<20 { onB.withLock { $0 -= 1 }; await Task.yield() } }
        }
        try await onA.save()
        try await onB.save()
        let converged = await eventually { onA.wrappedValue == 120 && onB.wrappedValue == 120 }
        let (storedA, storedB) = (try await replicas[0].counter("visits"), try await replicas[1].counter("visits"))
        #expect(converged, "A shows \(onA.wrappedValue), B shows \(onB.wrappedValue), A has \(storedA), B has \(storedB)")
        #expect(try await replicas[0].counter("visits").value == 120)
        #expect(try await replicas[1].counter("visits").value == 120)
        #expect(try await replicas[0].counter("visits").slots.count == 2, "one slot per incarnation")
    }

    @Test func remoteChangesArrivingDuringLocalSavesLoseNothing() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let shared = Shared(wrappedValue: 0, .counter("race", on: replicas[0]))
        // Local Shared deltas, remote increments, and direct increments of the same local slot
        // (as `replica-node incr` does in the node's process), all at once.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for _ in 0..<100 { shared.withLock { $0 += 1 } } }
            group.addTask { for _ in 0..<50 { _ = try? await replicas[1].addToCounter("race", delta: 3) } }
            group.addTask { for _ in 0..<30 { _ = try? await replicas[0].addToCounter("race", delta: 10) } }
        }
        try await shared.save()
        let expected = 100 + 150 + 300
        #expect(await eventually { shared.wrappedValue == expected }, "saw \(shared.wrappedValue)")
        #expect(try await eventually { try await replicas[1].counter("race").value == expected })
        #expect(try await replicas[0].counter("race").value == expected)
    }

    @Test func incrementsMadeWhileDisconnectedAllCount() async throws { try await withTwoDurableReplicas("counter") { layout, _, a, b in
        var b = b
        try await a.addToCounter("cups", delta: 1)
        #expect(try await eventually { try await b.counter("cups").value == 1 })

        await b.shutdown()  // partition: B is gone
        for _ in 0..<5 { try await a.addToCounter("cups", delta: 1) }
        b = try layout.start(1)  // B's own increments, made before it hears from A again
        try await b.addToCounter("cups", delta: 7)
        #expect(try await eventually {
            let (onA, onB) = (try await a.counter("cups").value, try await b.counter("cups").value)
            return onA == 13 && onB == 13
        })
        #expect(await eventually { await a.status().digest == b.status().digest })
    } }

    @Test func aWipedNodeRejoiningDoesNotReduceTheCounter() async throws { try await withTwoDurableReplicas("wipe") { layout, directories, a, b in
        var b = b
        try await a.addToCounter("visits", delta: 4)
        try await b.addToCounter("visits", delta: 6)
        #expect(try await eventually { try await a.counter("visits").value == 10 })
        let oldIncarnation = b.identity.incarnation

        await b.shutdown()
        directories[1].remove()  // the disk is lost: same node id, empty data directory
        b = try layout.start(1)
        #expect(b.identity.incarnation != oldIncarnation)
        @Shared(.counter("visits", on: b)) var onB = 0
        $onB.withLock { $0 += 1 }  // before or after B has caught up: either way a new slot
        try await $onB.save()
        #expect(try await eventually {
            let (onA, onB) = (try await a.counter("visits").value, try await b.counter("visits").value)
            return onA == 11 && onB == 11
        })
        #expect(await eventually { onB == 11 })
        let slots = try await a.counter("visits").slots
        #expect(slots.count == 3)
        #expect(slots.filter { $0.node == "r2" }.map(\.total).sorted() == [1, 6], "B's old slot is kept")
    } }

    /// A power loss under `synchronous = NORMAL` loses a node's last commits, which its members
    /// already hold: here, A's disk goes back to its first increment (a copy taken then) after
    /// members saw three. A's next increment must not start from the disk's older total: stamped
    /// later, it replaced the members' slot, and the two increments the disk lost were lost on
    /// every node (the counter showed 2). The run that ended uncleanly gives A a new slot.
    @Test func incrementsADiskLostAreNotUndoneByTheNextIncrement() async throws { try await withTwoDurableReplicas("lost") { layout, directories, a, b in
        var a = a
        try await a.addToCounter("visits", delta: 1)
        #expect(try await eventually { try await b.counter("visits").value == 1 })
        // What a power loss leaves of A's disk: the file as it was after the first increment.
        let file = directories[0].url.appendingPathComponent(SQLiteStore.fileName)
        let snapshot = directories[0].url.appendingPathComponent("at-the-first-increment.sqlite")
        let copier = try DatabaseQueue(path: file.path)
        try await copier.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [snapshot.path]) }
        try copier.close()
        try await a.addToCounter("visits", delta: 2)
        #expect(try await eventually { try await b.counter("visits").value == 3 })
        let slotBefore = a.counterSlotOwner

        await a.shutdown()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        try FileManager.default.moveItem(at: snapshot, to: file)
        a = try layout.start(0)
        #expect(a.counterSlotOwner != slotBefore, "a new slot after a run that did not stop cleanly")
        try await a.addToCounter("visits", delta: 1)  // before or after A's start-up sync: either way
        #expect(try await eventually {
            let (onA, onB) = (try await a.counter("visits").value, try await b.counter("visits").value)
            return onA == 4 && onB == 4
        })
        await a.shutdown()
        let again = try layout.start(0)
        #expect(again.counterSlotOwner == a.counterSlotOwner, "and the same slot after a clean stop")
    } }

    /// A start that fails once the store is open (its port taken) stops the store cleanly:
    /// nothing was published, and the next start keeps the counter slot.
    @Test func aStartThatFailsKeepsTheCounterSlot() async throws {
        let directory = TemporaryDirectory("failed-start")
        defer { directory.remove() }
        let layout = ReplicaLayout(count: 1, storage: { _ in .directory(directory.url) })
        let first = try layout.start(0)
        let owner = first.counterSlotOwner
        await first.shutdown()
        let context = try ZMQContext()
        let squatter = try context.socket(.pub)
        try squatter.bind(layout.configurations[0].listen.publishAddress)
        #expect(throws: (any Error).self) { try layout.start(0) }
        squatter.close()
        let again = try layout.start(0)
        #expect(again.counterSlotOwner == owner)
        await again.shutdown()
    }

    @Test func anIncrementThatFailsIsRetriedByTheNextSave() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.counter("n", on: replica)) var n = 0
        $n.withLock { $0 += 2 }
        try await $n.save()
        // A newer program owns this slot format: saving must fail, not overwrite.
        let slot = FamilyKey.counterSlot("n", incarnation: replica.counterSlotOwner)
        try await replica.write(slot, payload: Array("{\"total\":2}".utf8), schema: CounterFamily.slotSchema + 1)
        $n.withLock { $0 += 1 }
        await #expect(throws: SharingError.self) { try await $n.save() }
        #expect($n.saveError != nil)
        #expect(try await replica.entry(for: slot)?.schema == CounterFamily.slotSchema + 1, "the newer slot is untouched")
    }

    /// Edits keyed by two slots (a failed save, then the key moved to another replica) are one
    /// addition to this replica's own slot: written as two, one could commit and the other fail,
    /// and both stayed pending, the first to be counted twice (helper-63).
    @Test func editsOfTwoSlotsAreWrittenAsOneAddition() async throws {
        let replica = try makeReplicas(1)[0]
        let family = CounterFamily("n")
        let written = try await family.write(["slot-a": 2, "slot-b": 3], to: replica)
        #expect(written.committed.count == 1)
        #expect(try await replica.counter("n").value == 5)
        #expect(try await family.write(["slot-a": 2, "slot-b": -2], to: replica).committed.isEmpty, "nothing to add")
        await #expect(throws: SharingError.counterOverflow(name: "n")) { try await family.write(["slot-a": .max, "slot-b": 1], to: replica) }
        await replica.shutdown()
    }

    /// A save that ends after the key moved to another replica (a new process default) is not
    /// recorded in what the key shows of the new one: it showed the old replica's slot in the
    /// new replica's counter (helper-63).
    @Test func aSaveEndingAfterTheKeyMovedIsNotRecordedForTheNewReplica() async throws {
        let replicas = try makeReplicas(2)
        let family = CounterFamily("n")
        var books = FamilyBooks(family: family)
        books.start(on: replicas[0])
        let edits = books.plan(1, on: replicas[0])
        let written = try await family.write(edits, to: replicas[0])
        books.rebase(on: replicas[1])
        _ = books.finishSave(.success(written), on: replicas[0])
        #expect(books.stored.isEmpty && books.inflight == nil)
        for replica in replicas { await replica.shutdown() }
    }

    @Test func familyKeysCannotCollideWithUserKeysOrEachOther() {
        #expect(FamilyKey.isReserved(FamilyKey.counterSlot("a", incarnation: UUID())))
        #expect(!FamilyKey.isReserved("counter/a"))
        #expect(!FamilyKey.logPrefix("a/b").hasPrefix(FamilyKey.logPrefix("a")))
        #expect(FamilyKey.logElement("a", id: "b/c") != FamilyKey.logElement("a/b", id: "c"))
        #expect(FamilyKey.readable(FamilyKey.counterPrefix("visits")) == "␟counter/visits/")
        #expect(FamilyKey.counterSlot("visits", incarnation: UUID()).utf8.count == "visits".utf8.count + FamilyKey.counterSlotOverhead)
        #expect(FamilyKey.counterSlotOverhead == 46, "the marker, counter/, the slash and a 36-character incarnation")
    }
}

/// Slots written on different nodes can add up past `Int.max` although each node refuses to
/// overflow its own: the snapshot says so instead of showing the wrapped sum as if it were right.
@Suite struct CounterOverflowTests {
    private func slot(_ incarnation: String, _ node: NodeID, _ total: Int) -> Entry {
        Entry(key: FamilyKey.counterPrefix("c") + incarnation, version: Version(timestamp: HybridTimestamp(rawValue: 1 << 16), node: node),
              schema: CounterFamily.slotSchema, payload: Array(String(total).utf8))
    }

    @Test func slotsThatAddUpPastTheLimitAreAProblem() {
        let over = CounterFamily.snapshot("c", entries: [slot("a", "n1", .max), slot("b", "n2", 10)])
        #expect(over.problems.contains { $0.contains("add up beyond") })
        let fine = CounterFamily.snapshot("c", entries: [slot("a", "n1", .max), slot("b", "n2", 10), slot("d", "n3", -20)])
        #expect(fine.value == .max - 10)
        #expect(fine.problems.isEmpty, "an overflow undone by a later slot is no problem: the sum is right")
    }
}
