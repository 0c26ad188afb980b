import Foundation
import Testing
@testable import ReplicaCore

/// The rule for keys of the process default (docs/sharing.md, "The default replica"): a `Shared`
/// made before `Replica.setDefault` binds when it is set. These tests change the process
/// default, so they run one at a time; no other suite uses it.
@Suite(.serialized) struct DefaultReplicaTests {
    init() { Replica.setDefault(nil) }

    @Test func aSharedMadeBeforeTheDefaultBindsWhenItIsSet() async throws {
        defer { Replica.setDefault(nil) }
        let replica = try makeReplicas(1)[0]
        try await replica.write("early", payload: Array("41".utf8))

        @Shared(.replicated("early")) var early = 0
        #expect(early == 0)
        #expect($early.loadError as? SharingError == .noDefaultReplica(key: #".replicated("early")"#))
        #expect(($early.loadError as? SharingError)?.description.contains("Replica.setDefault") == true)

        Replica.setDefault(replica)
        #expect(await eventually { early == 41 && $early.loadError == nil })
        // One state for the name, whenever it was made.
        @Shared(.replicated("early")) var later = 0
        #expect($later.reference === $early.reference)
        $later.withLock { $0 = 42 }
        try await $later.save()
        #expect(early == 42)
        #expect(try await replica.entry(for: "early")?.payload == Array("42".utf8))
    }

    @Test func changesMadeBeforeBindingAreSavedWhenItBinds() async throws {
        defer { Replica.setDefault(nil) }
        let replica = try makeReplicas(1)[0]
        try await replica.addToCounter("early-visits", delta: 10)
        try await replica.write([Drink.log("early-drinks").put(try Drink(name: "stored", mg: 1))])

        @Shared(.replicated("early-note")) var note = ""
        @Shared(.counter("early-visits")) var visits = 100  // a counter's initial value is not used
        @Shared(.drinks("early-drinks")) var drinks: [Drink] = []
        #expect(visits == 0)
        // At once, as for a register (it came a few milliseconds later, from the follow task).
        #expect($visits.loadError as? SharingError == .noDefaultReplica(key: #".counter("early-visits")"#))
        #expect($drinks.loadError as? SharingError == .noDefaultReplica(key: #".log("early-drinks")"#))
        $note.withLock { $0 = "written before binding" }
        $visits.withLock { $0 += 3 }
        $drinks.withLock { $0.append(try! Drink(name: "added before binding", mg: 2)) }
        #expect($note.saveError as? SharingError == .noDefaultReplica(key: #".replicated("early-note")"#))
        await #expect(throws: SharingError.noDefaultReplica(key: #".counter("early-visits")"#)) { try await $visits.save() }

        Replica.setDefault(replica)
        #expect(await eventually { $note.saveError == nil && $visits.saveError == nil && $drinks.saveError == nil })
        // "No replica yet" ends too, also when the save made as the key bound commits before its
        // catch-up reads the entry (then only the save can say so: it stayed set in 3 of 21 runs).
        #expect(await eventually { $note.loadError == nil && $visits.loadError == nil && $drinks.loadError == nil })
        #expect(try await eventually { try await replica.entry(for: "early-note")?.payload == Array(#""written before binding""#.utf8) })
        #expect(try await eventually { try await replica.counter("early-visits").value == 13 })
        #expect(await eventually { visits == 13 })
        #expect(await eventually { Set(drinks.map(\.name)) == ["stored", "added before binding"] })
        #expect(note == "written before binding")
    }

    @Test func requireAndLoadFailAtOnceWithoutADefault() async throws {
        await #expect(throws: SharingError.noDefaultReplica(key: #".replicated("nowhere")"#)) {
            _ = try await Shared<Int>(require: .replicated("nowhere"))
        }
        @Shared(.replicated("nowhere")) var value = 1
        await #expect(throws: SharingError.noDefaultReplica(key: #".replicated("nowhere")"#)) { try await $value.load() }
    }

    @Test func aNewDefaultMovesTheKeysToIt() async throws {
        defer { Replica.setDefault(nil) }
        let (first, second) = (try makeReplicas(1)[0], try makeReplicas(1)[0])
        try await first.write("moved", payload: Array("1".utf8))
        try await second.write("moved", payload: Array("2".utf8))
        Replica.setDefault(first)
        @Shared(.replicated("moved")) var value = 0
        #expect(value == 1)
        Replica.setDefault(second)
        #expect(await eventually { value == 2 })
    }

    /// A new default that holds no value for the key shows the initial value, as a key new to
    /// it does; it kept showing the previous default's value (and the next change saved that
    /// value into the new default). (An initial value never evaluated, because the first default
    /// had a value, is not made up: the value shown stays, as Sharing's `load(_:)` of a key
    /// without a stored value keeps it.)
    @Test func aNewDefaultWithoutTheKeyShowsTheInitialValue() async throws {
        defer { Replica.setDefault(nil) }
        let (first, second) = (try makeReplicas(1)[0], try makeReplicas(1)[0])
        Replica.setDefault(first)
        @Shared(.replicated("only-on-first")) var value = 1
        $value.withLock { $0 = 9 }
        try await $value.save()
        Replica.setDefault(second)
        #expect(await eventually { value == 1 })
        #expect(try await second.entry(for: "only-on-first") == nil, "moving wrote nothing")
        $value.withLock { $0 += 1 }
        try await $value.save()
        #expect(try await second.entry(for: "only-on-first")?.payload == Array("2".utf8))
        #expect(try await first.entry(for: "only-on-first")?.payload == Array("9".utf8))
    }
}
