import Foundation
import GRDB
import Observation
import Synchronization
import Testing
@testable import ReplicaCore

@Suite struct SharedTests {
    @Test func anIncrementOnOneNodeIsObservedOnTheOther() async throws {
        let replicas = try makeReplicas(2)
        @Shared(.replicated("count", on: replicas[0])) var countOnA = 0
        @Shared(.replicated("count", on: replicas[1])) var countOnB = 0
        let valuesOnB = $countOnB.values
        $countOnA.withLock { $0 += 1 }
        try await $countOnA.save()
        let seen = await first(valuesOnB) { $0 == 1 }
        #expect(seen == 1)
        #expect(countOnB == 1)
        #expect($countOnB.saveError == nil)
    }

    /// A load right after a change, while its save is in flight, keeps the change: the stored
    /// value is older. (It showed the stored value, the save's own change was never delivered,
    /// and the next `withLock` built on the old value, losing the change.)
    @Test func aLoadWhileASaveIsInFlightKeepsTheNewerLocalValue() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("x", payload: Array("3".utf8))
        @Shared(.replicated("x", on: replica)) var x = 0
        #expect(x == 3)
        for value in 5...20 {
            $x.withLock { $0 = value }
            try await $x.load()
            #expect(x == value, "the load after setting \(value)")
        }
        try await $x.save()
        #expect(x == 20)
        #expect(try await replica.entry(for: "x")?.payload == Array("20".utf8))
        $x.withLock { $0 += 1 }
        try await $x.save()
        #expect(try await replica.entry(for: "x")?.payload == Array("21".utf8))
    }

    /// A save that begins and ends while a change received earlier is being shown (after the
    /// key recorded that change, before its value reached the reference) is shown after it: the
    /// value shown is the stored one. (The older change's value stayed shown for good, while every
    /// node stored the save: two nodes saving one register under load hit it about once in 100.)
    @Test func aSaveThatEndsWhileAnOlderChangeIsShownIsShownAfterIt() async throws {
        let replica = try makeReplicas(1)[0]
        let key = ReplicatedKey<Int>("race", on: replica)
        let shown = Mutex<[Int]>([])
        let saved = DispatchSemaphore(value: 0)
        let savedInside = Mutex(false)
        let subscriber = SharedSubscriber<Int>(
            callback: { event in
                guard case .value(let value) = event else { return }
                let first = shown.withLock { shown in
                    shown.append(value)
                    return shown == [1]
                }
                // Inside the first yield, as a thread preempted there: a save of 2 runs whole.
                guard first else { return }
                key.save(2, context: .didSet, continuation: SaveContinuation("the save of 2") { _ in saved.signal() })
                let inside = saved.wait(timeout: .now() + 10) == .success
                savedInside.withLock { $0 = inside }
            },
            modifyValue: { _ in }, readValue: { _ in })
        let subscription = key.subscribe(context: .userInitiated, subscriber: subscriber)
        defer { subscription.cancel() }
        try await replica.write("race", payload: Array("1".utf8))  // as a change from another node
        #expect(try await eventually { try await replica.entry(for: "race")?.payload == Array("2".utf8) })
        // The save runs on Swift's shared pool: with every thread of it busy (2 cores, the whole
        // suite at once) it cannot run inside the yield, and the interleaving under test does
        // not happen (the save then ends after the yield, which a reference that saved shows).
        guard savedInside.withLock({ $0 }) else { return }
        #expect(await eventually { shown.withLock { $0.last } == 2 }, "\(shown.withLock { $0 })")
    }

    /// The other interleaving, seen by the reference: a change the key was delivering when a
    /// save began replaces the value being saved; the save's end reads the stored value again.
    /// (The value delivered, older than the save, stayed shown for good.)
    @Test func aChangeDeliveredWhileASaveIsInFlightDoesNotOutliveTheSave() async throws {
        let key = ManualKey()
        @Shared(key) var value = 0
        $value.withLock { $0 = 3 }  // its save waits in the key
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        key.deliver(1)  // an older change, delivered while the save is in flight
        #expect(value == 1)
        key.finishSave()  // stores 3
        #expect(await eventually { value == 3 }, "the stored value")
    }

    /// A change delivered while a newer local change waits for the save in flight is refused
    /// (the local one is saved next and wins), and observers are not told of it: nothing
    /// changed. (They were: one render for nothing.)
    @Test func aChangeRefusedForANewerLocalOneIsNotAnnounced() async throws {
        let key = ManualKey()
        @Shared(key) var value = 0
        $value.withLock { $0 = 3 }  // its save waits in the key
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        $value.withLock { $0 = 4 }  // waits for the save in flight: saved next
        let flag = ObservationFlag { _ = value }
        key.deliver(1)
        #expect(value == 4, "refused")
        #expect(!flag.hasFired, "nothing changed, nothing announced")
        key.finishSave()  // stores 3, then the save of 4 starts
        #expect(await eventually { key.pendingSave.withLock { $0?.value == 4 } })
        key.finishSave()
        #expect(value == 4 && key.stored.withLock { $0 } == 4)
    }

    /// A key whose saves wait until the test finishes them, and whose changes the test delivers.
    final class ManualKey: SharedKey, @unchecked Sendable {
        let stored = Mutex(0)
        let pendingSave = Mutex<(value: Int, continuation: SaveContinuation)?>(nil)
        private let subscriber = Mutex<SharedSubscriber<Int>?>(nil)
        var id: ObjectIdentifier { ObjectIdentifier(self) }

        func load(context: LoadContext<Int>, continuation: LoadContinuation<Int>) { continuation.resume(returning: stored.withLock { $0 }) }
        func subscribe(context: LoadContext<Int>, subscriber: SharedSubscriber<Int>) -> SharedSubscription {
            self.subscriber.withLock { $0 = subscriber }
            return SharedSubscription {}
        }
        func save(_ value: Int, context: SaveContext, continuation: SaveContinuation) { pendingSave.withLock { $0 = (value, continuation) } }
        func deliver(_ value: Int) { subscriber.withLock { $0 }?.yield(value) }
        func finishSave() {
            guard let save = pendingSave.withLock({ pending in defer { pending = nil }; return pending }) else { return }
            stored.withLock { $0 = save.value }
            save.continuation.resume()
        }
        /// Ends the save in flight with a failure (by default a full disk): nothing stored.
        func failSave(_ error: any Error = ReplicaError.saveFailed(key: "k", reason: "disk is full")) {
            guard let save = pendingSave.withLock({ pending in defer { pending = nil }; return pending }) else { return }
            save.continuation.resume(throwing: error)
        }
    }

    /// A change made while a save was in flight is saved when that save ends, even once every
    /// `Shared` of the key is gone (helper-63: a function-scope `@Shared` that changed twice and
    /// returned lost its second change, with no error anywhere).
    @Test func aChangeWaitingForTheSaveInFlightIsSavedAfterEveryShareIsGone() async throws {
        let key = ManualKey()
        do {
            @Shared(key) var value = 0
            $value.withLock { $0 = 1 }  // its save waits in the key
            #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
            $value.withLock { $0 = 2 }  // waits for the save in flight
        }
        key.finishSave()  // stores 1; the save of 2 starts
        #expect(await eventually { key.pendingSave.withLock { $0?.value == 2 } })
        key.finishSave()
        #expect(key.stored.withLock { $0 } == 2)
    }

    /// The same with a real counter: increments made in a function that returns are all counted.
    @Test func aCounterIncrementedInAFunctionThatReturnsKeepsEveryIncrement() async throws {
        let replica = try makeReplicas(1)[0]
        func visit() {
            @Shared(.counter("visits", on: replica)) var visits = 0
            for _ in 0..<3 { $visits.withLock { $0 += 1 } }
        }
        for _ in 0..<5 { visit() }
        #expect(await eventually { (try? await replica.counter("visits").value) == 15 })
        await replica.shutdown()
    }

    /// A local change whose save failed is not replaced by a change from the key (from another
    /// node): the save is retried, and the local change, later, wins. (The remote value replaced
    /// it, lost, while `saveError` still named it: helper-63.)
    @Test func aChangeWhoseSaveFailedIsRetriedNotReplacedByARemoteChange() async throws {
        let key = ManualKey()
        @Shared(key) var value = 0
        $value.withLock { $0 = 5 }
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        key.failSave()
        #expect(await eventually { $value.saveError != nil })
        key.deliver(9)  // another node's change
        #expect(value == 5, "the unsaved local change stays")
        #expect(await eventually { key.pendingSave.withLock { $0?.value == 5 } }, "and its save is retried")
        key.finishSave()
        #expect(await eventually { $value.saveError == nil })
        key.deliver(11)  // saved: changes from the key are shown again
        #expect(value == 11)

        // A change refused for good (too large) gives way to the key's value: it never saves.
        $value.withLock { $0 = 12 }
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        key.failSave(ReplicaError.valueTooLarge(size: 2, limit: 1))
        #expect(await eventually { $value.saveError != nil })
        key.deliver(13)
        #expect(value == 13 && key.pendingSave.withLock { $0 == nil })
    }

    /// A change from the key that arrives after `withLock` changed the value but before its
    /// save started (observers run in between) does not replace the change: that lost the
    /// local change, with no error (helper-66).
    @Test func aRemoteChangeBeforeALocalChangesSaveStartsDoesNotReplaceIt() async throws {
        let key = ManualKey()
        @Shared(key) var value = 0
        withObservationTracking { _ = value } onChange: { key.deliver(99) }
        $value.withLock { $0 = 5 }
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        #expect(key.pendingSave.withLock { $0?.value } == 5)
        key.finishSave()
        #expect(value == 5 && key.stored.withLock { $0 } == 5)
    }

    /// A save that fails after the key replaced its value (a newer value, held for the save's
    /// end) leaves nothing to save: retried at the next change from the key, it wrote that older
    /// value back over the newer one (helper-64).
    @Test func aFailedSaveWhoseValueTheKeyReplacedIsNotRetried() async throws {
        let key = ManualKey()
        @Shared(key) var value = 0
        $value.withLock { $0 = 5 }
        #expect(await eventually { key.pendingSave.withLock { $0 != nil } })
        key.deliver(7)  // newer, while the save is in flight
        key.failSave()
        #expect(await eventually { $value.saveError != nil })
        key.deliver(9)
        #expect(value == 9)
        #expect(key.pendingSave.withLock { $0 == nil }, "7 is not written back over 9")
    }

    /// A bad key says why once: "invalid key: it is empty", not "invalid key: invalid key (empty)".
    @Test func aBadKeyIsRefusedInOneClearSentence() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("", on: replica)) var empty = 1
        $empty.withLock { $0 = 2 }
        await #expect(throws: ReplicaError.invalidKey("it is empty")) { try await $empty.save() }
        #expect(ReplicaError.invalidKey("it is empty").description == "invalid key: it is empty")
        await #expect(throws: ReplicaError.invalidKey("it contains U+0000")) { try await replica.write("a\u{0}b", payload: [1]) }
    }

    @Test func theInitialValueIsUsedOnlyWhenStorageHasNone() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("stored", payload: Array("41".utf8))
        @Shared(.replicated("stored", on: replica)) var stored = 7
        @Shared(.replicated("fresh", on: replica)) var fresh = 7
        #expect(stored == 41)
        #expect(fresh == 7)
        #expect(try await replica.entry(for: "fresh") == nil, "an unused initial value is not written")
    }

    @Test func theInitialValueIsNotEvaluatedWhenStorageHasOne() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("present", payload: Array("1".utf8))
        var evaluations = 0
        func initial() -> Int { evaluations += 1; return 0 }
        // Neither for the first Shared of a key (storage is read first) ...
        let first = Shared(wrappedValue: initial(), .replicated("present", on: replica))
        // ... nor for another one while the first is alive (it shares the reference).
        let second = Shared(wrappedValue: initial(), .replicated("present", on: replica))
        #expect(evaluations == 0)
        #expect(first.wrappedValue == 1 && second.wrappedValue == 1)
        // With nothing stored, it is evaluated, once.
        let absent = Shared(wrappedValue: initial(), .replicated("absent", on: replica))
        #expect(evaluations == 1)
        #expect(absent.wrappedValue == 0)
    }

    @Test func requireThrowsForAMissingKey() async throws {
        let replica = try makeReplicas(1)[0]
        await #expect(throws: SharingError.noValue(key: #".replicated("absent")"#)) {
            _ = try await Shared<Int>(require: .replicated("absent", on: replica))
        }
        try await replica.write("present", payload: Array("5".utf8))
        let present = try await Shared<Int>(require: .replicated("present", on: replica))
        #expect(present.wrappedValue == 5)
    }

    @Test func twoSharedOfOneKeyShareOneReference() async throws {
        let replica = try makeReplicas(1)[0]
        let a = Shared(wrappedValue: 0, .replicated("same", on: replica))
        let b = Shared(wrappedValue: 0, .replicated("same", on: replica))
        a.withLock { $0 = 3 }
        #expect(b.wrappedValue == 3)
        #expect(a.reference === b.reference)
    }

    @Test func remoteUpdatesDoNotEchoBackAsSaves() async throws {
        let replicas = try makeReplicas(2)
        @Shared(.replicated("echo", on: replicas[1])) var onB = ""
        let valuesOnB = $onB.values
        try await replicas[0].write("echo", payload: Array("\"from A\"".utf8))
        #expect(await first(valuesOnB) { $0 == "from A" } != nil)
        let published = await replicas[1].status().counters.updatesPublished
        #expect(published == 0, "B applied A's update without writing it again")
    }

    @Test func aCorruptPayloadSetsLoadErrorKeepsTheLastGoodValueAndTheBytes() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.replicated("settings", on: replicas[1])) var settings = ["theme": "light"]
        let values = $settings.values
        try await replicas[0].write("settings", payload: Array("{\"theme\":\"dark\"}".utf8))
        #expect(await first(values) { $0["theme"] == "dark" } != nil)

        let garbage = Array("{\"theme\": 42".utf8)
        try await replicas[0].write("settings", payload: garbage)
        #expect(await eventually { $settings.loadError != nil })
        #expect(settings == ["theme": "dark"], "the last good value stays")
        #expect(try await replicas[1].entry(for: "settings")?.payload == garbage, "the bytes are in the store")
        #expect(try await eventually { try await replicas[1].quarantined(key: "settings").first?.entry.payload == garbage })
        #expect(await eventually { await !replicas[1].status().loadErrors.isEmpty })

        // Overwriting keeps the quarantined copy; the error clears on the next good value.
        $settings.withLock { $0 = ["theme": "blue"] }
        try await $settings.save()
        // Its own good save ends the error: the stored value is the one it just wrote (it
        // stayed until another node wrote a good value).
        #expect($settings.loadError == nil)
        #expect(await eventually { await replicas[1].status().loadErrors.isEmpty })
        // "green" must be written after A has B's "blue", or the two are concurrent and the
        // tie-break may pick "blue".
        #expect(try await eventually { try await replicas[0].entry(for: "settings")?.payload == Array("{\"theme\":\"blue\"}".utf8) })
        try await replicas[0].write("settings", payload: Array("{\"theme\":\"green\"}".utf8))
        #expect(await eventually { $settings.loadError == nil && settings["theme"] == "green" })
        #expect(try await replicas[1].quarantined(key: "settings").map(\.entry.payload) == [garbage])
        #expect(await eventually { await replicas[1].status().loadErrors.isEmpty })
    }

    /// `withLock` then `save()`: one write. The save waits for the one `withLock` started,
    /// which holds the change, instead of writing the same value under a second version (each
    /// member's `values` then yielded it twice).
    @Test func saveAfterWithLockWaitsForTheSaveInFlight() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("once", on: replica)) var once = 0
        let before = await replica.counterSnapshot().updatesPublished
        $once.withLock { $0 = 1 }
        try await $once.save()
        #expect(await replica.counterSnapshot().updatesPublished - before == 1)
        #expect(try await replica.entry(for: "once")?.payload == Array("1".utf8))
        try await $once.save()
        #expect(await replica.counterSnapshot().updatesPublished - before == 1, "an explicit save of the value stored writes nothing")
    }

    /// A save of the value already stored writes nothing. It wrote a new version of the same
    /// value, which under last-writer-wins replaced a real change made meanwhile on another node:
    /// an outside tester lost another node's write in up to 10 of 20 rounds with a `withLock`
    /// that only read the value, and in 5 of 20 with a `save()` of an unchanged value.
    @Test func aSaveThatChangesNothingWritesNothing() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("theme", on: replica)) var theme = "light"
        $theme.withLock { $0 = "dark" }
        try await $theme.save()
        let stored = try #require(try await replica.entry(for: "theme"))
        let before = await replica.counterSnapshot().updatesPublished

        $theme.withLock { _ = $0.count }            // reads only
        try await $theme.save()                     // nothing to save
        $theme.withLock { $0 = "dark" }             // the same value
        try await $theme.save()
        #expect(try await replica.entry(for: "theme") == stored, "no new version")
        #expect(await replica.counterSnapshot().updatesPublished == before)

        $theme.withLock { $0 = "light" }
        try await $theme.save()
        #expect(try await replica.entry(for: "theme")?.payload == Array(#""light""#.utf8), "a change still saves")
        // A value that arrived from elsewhere is the one stored: saving it again writes nothing.
        let remote = try await replica.write("theme", payload: Array(#""sepia""#.utf8))
        #expect(await eventually { theme == "sepia" })
        try await $theme.save()
        #expect(try await replica.entry(for: "theme") == remote)
    }

    /// Keys starting with U+001F hold counter slots and log elements; a register named so could
    /// pose as a counter's slot (an outside tester added 1,000 to a counter through one).
    @Test func aRegisterNameInTheReservedRangeIsRefused() async throws {
        let replica = try makeReplicas(1)[0]
        let name = FamilyKey.counterPrefix("visits") + "00000000-0000-0000-0000-000000000001"
        @Shared(.replicated(name, on: replica)) var fake = 0
        let refusal = SharingError.reservedKey(key: ".replicated(\(String(reflecting: name)))")
        #expect($fake.loadError as? SharingError == refusal)
        $fake.withLock { $0 = 1000 }
        await #expect(throws: refusal) { try await $fake.save() }
        #expect(try await replica.entry(for: name) == nil)
        #expect(try await replica.counter("visits").value == 0)
        #expect(refusal.description.contains("reserved for counters and logs"))
    }

    /// Status changes that change nothing are not announced to observers (a new `Shared` fired
    /// one `onChange` with nothing changed: one extra render).
    @Test func aStatusLeftAsItWasIsNoChange() {
        typealias Status = KeyReference<ReplicatedKey<Int>>.Status
        struct Failure: Error {}
        #expect(Status(isLoading: false).isUnchanged(from: Status(isLoading: false)))
        #expect(!Status(isLoading: true).isUnchanged(from: Status(isLoading: false)))
        #expect(!Status(isLoading: false, loadError: Failure()).isUnchanged(from: Status(isLoading: false)))
        #expect(!Status(isLoading: false).isUnchanged(from: Status(isLoading: false, saveError: Failure())))
        #expect(!Status(isLoading: false, loadError: Failure()).isUnchanged(from: Status(isLoading: false, loadError: Failure())),
                "errors are not comparable: a new one is a change")
    }

    @Test(.enabled(if: isRoot, "mounting a small tmpfs needs root"))
    func aFullDiskSetsSaveErrorKeepsTheValueAndRecovers() async throws {
        let disk = try SmallDisk(size: "2m")
        defer { disk.remove() }
        let replica = try makeReplicas(1) { _ in .directory(disk.url.appendingPathComponent("data")) }[0]
        @Shared(.replicated("notes", on: replica)) var notes = ""
        $notes.withLock { $0 = "saved" }
        try await $notes.save()
        #expect($notes.saveError == nil)

        try disk.fill()
        $notes.withLock { $0 = String(repeating: "x", count: 512 * 1024) }
        await #expect(throws: ReplicaError.self) { try await $notes.save() }
        #expect($notes.saveError != nil)
        #expect(notes.count == 512 * 1024, "the new value stays in memory")
        #expect(await !replica.status().saveErrors.isEmpty)
        #expect(try await replica.entry(for: "notes")?.payload == Array("\"saved\"".utf8), "reads keep working")
        try disk.unfill()
        try await $notes.save()
        #expect($notes.saveError == nil)
        #expect(await replica.status().saveErrors.isEmpty)
        #expect(try await replica.entry(for: "notes")?.payload?.count == 512 * 1024 + 2)
    }

    /// A batch refused by a full disk lists 20 of its keys one by one and counts the others in
    /// one row (an import onto a full disk listed 4,001 problems; helper-75).
    @Test(.enabled(if: isRoot, "mounting a small tmpfs needs root"))
    func aFullDisksRefusalsOfABatchAreListedBoundedly() async throws {
        let disk = try SmallDisk(size: "2m")
        defer { disk.remove() }
        let replica = try makeReplicas(1) { _ in .directory(disk.url.appendingPathComponent("data")) }[0]
        try await replica.write("before", payload: Array("1".utf8))
        try disk.fill()
        let batch = (0..<50).map { Replica.WriteRequest(key: "k\($0)", payload: Array(String(repeating: "x", count: 20 * 1024).utf8)) }
        await #expect(throws: ReplicaError.self) { try await replica.write(batch) }
        let refused = await replica.status().saveErrors
        #expect(refused.count == CommitQueue.listedSaveFailures + 1, "\(refused.map(\.subject))")
        let more = try #require(refused.first { $0.subject == CommitQueue.moreSaveFailuresSubject })
        #expect(more.count == 50 - CommitQueue.listedSaveFailures)
        try disk.unfill()
        await replica.shutdown()
    }

    /// A node that only receives writes: the refusals of its full disk clear once a received
    /// entry commits (they stayed listed, failing alerts on `saveErrors`, until a local write).
    @Test(.enabled(if: isRoot, "mounting a small tmpfs needs root"))
    func aFullDisksRefusalsClearWhenAReceivedEntryCommits() async throws {
        let disk = try SmallDisk(size: "2m")
        defer { disk.remove() }
        let replicas = try makeReplicas(2) { index in index == 0 ? .directory(disk.url.appendingPathComponent("data")) : .memory }
        let (full, writer) = (replicas[0], replicas[1])
        try await full.write("before", payload: Array("1".utf8))
        try disk.fill()
        await #expect(throws: ReplicaError.self) {
            try await full.write("refused", payload: Array(String(repeating: "x", count: 512 * 1024).utf8))
        }
        #expect(await !full.status().saveErrors.isEmpty)
        try disk.unfill()
        try await writer.write("from-writer", payload: Array("2".utf8))
        #expect(await eventually { (try? await full.entry(for: "from-writer")) != nil })
        #expect(await eventually { await full.status().saveErrors.isEmpty })
        #expect(await full.health().healthy)
        for replica in replicas { await replica.shutdown() }
    }

    /// A catch-up that finds nothing missing does not clear the `commit` problem while the disk
    /// is still full (it did: small commits still fitted in SQLite's log, and health turned green
    /// while every large write was refused); once space is freed, it clears with nobody writing.
    @Test(.enabled(if: isRoot, "mounting a small tmpfs needs root"))
    func anEmptyCatchUpClearsAFullDisksProblemOnlyOnceItHasRoom() async throws {
        let disk = try SmallDisk(size: "8m")
        defer { disk.remove() }
        let replicas = try makeReplicas(2) { index in index == 0 ? .directory(disk.url.appendingPathComponent("data")) : .memory }
        let full = replicas[0]
        try await full.write("before", payload: Array("1".utf8))
        #expect(await eventually { await full.status().peers.first?.inSync == true })
        let syncsBefore = await full.status().peers.first?.syncsCompleted ?? 0
        try disk.fill()
        await #expect(throws: ReplicaError.self) {
            try await full.write("refused", payload: Array(String(repeating: "x", count: 512 * 1024).utf8))
        }
        #expect(await !full.health().healthy)
        #expect(await eventually { (await full.status().peers.first?.syncsCompleted ?? 0) > syncsBefore + 1 }, "catch-ups ran")
        #expect(await full.status().problems.contains { $0.kind == .commit }, "still listed: the disk is full")

        try disk.unfill()
        #expect(await eventually(timeout: .seconds(20)) { await full.health().healthy }, "cleared by a test commit, no write")
        for replica in replicas { await replica.shutdown() }
    }

    /// A small write that still fits in SQLite's log on a full disk does not clear the `commit`
    /// problem a large one raised: it stays listed (health failing) while the disk lacks room,
    /// and clears by itself once space is freed. (It cleared at each small commit, and health
    /// passed between a small write and a large one; `faults.py --only disk-full`.)
    @Test(.enabled(if: isRoot, "mounting a small tmpfs needs root"))
    func aSmallCommitOnAFullDiskDoesNotClearItsProblem() async throws {
        let disk = try SmallDisk(size: "8m")
        defer { disk.remove() }
        let replica = try makeReplicas(1) { _ in .directory(disk.url.appendingPathComponent("data")) }[0]
        // Large writes first, all checkpointed: the log's pages are allocated, and the next
        // commits rewind into them, needing no new space (as on a node that ran a while).
        for index in 0..<10 { try await replica.write("warm\(index)", payload: [UInt8](repeating: 0x31, count: 64 * 1024)) }
        let database = try DatabaseQueue(path: disk.url.appendingPathComponent("data/\(SQLiteStore.fileName)").path)
        #expect(await eventually {
            let row = try? database.writeWithoutTransaction { try Row.fetchOne($0, sql: "PRAGMA wal_checkpoint(PASSIVE)") }
            return row.map { $0[1] as Int == $0[2] as Int } ?? false
        })
        try database.close()
        try disk.fill()
        // A batch far larger than the log's 640 KiB: it needs new pages, and there are none.
        let large = (0..<40).map { Replica.WriteRequest(key: "large\($0)", payload: [UInt8](repeating: 0x78, count: 100 * 1024)) }
        var refused = false
        do { _ = try await replica.write(large) } catch { refused = true }
        #expect(refused, "a large batch is refused on the full disk")
        var fitted = false
        for index in 0..<20 where !fitted {
            fitted = (try? await replica.write("small\(index)", payload: Array("2".utf8))) != nil
        }
        try #require(fitted, "a small write fits in the log's pages already allocated")
        #expect(await !replica.health().healthy, "the disk is still full")
        let problem = try #require(await replica.status().problems.first { $0.kind == .commit })
        #expect(problem.message.contains("bytes free") && problem.message.contains("free space"), "\(problem.message)")

        try disk.unfill()
        #expect(await eventually(timeout: .seconds(10)) { await replica.health().healthy }, "cleared by a look at the disk, no write")
        await replica.shutdown()
    }

    @Test func inMemoryKeysShareStateWithinTheProcess() async throws {
        @Shared(.inMemory("preview")) var a = 1
        @Shared(.inMemory("preview")) var b = 1
        $a.withLock { $0 = 2 }
        #expect(b == 2)
        try await $a.save()
    }

    @Test func unpersistedSharedValuesWork() async throws {
        let shared = Shared(value: [1, 2])
        shared.withLock { $0.append(3) }
        #expect(shared.wrappedValue == [1, 2, 3])
        try await shared.save()
        try await shared.load()
        #expect(shared.wrappedValue == [1, 2, 3])
    }

    @Test func aContinuationResumedTwiceIsReportedNotFatal() async throws {
        struct TwiceKey: SharedKey, CustomStringConvertible {
            var id: String { "twice" }
            var description: String { "twice" }
            func load(context: LoadContext<Int>, continuation: LoadContinuation<Int>) {
                continuation.resume(returning: 1)
                continuation.resume(returning: 2)
            }
            func subscribe(context: LoadContext<Int>, subscriber: SharedSubscriber<Int>) -> SharedSubscription { SharedSubscription {} }
            func save(_ value: Int, context: SaveContext, continuation: SaveContinuation) {}  // never resumes
        }
        let before = ContinuationMisuse.count
        let shared = Shared(wrappedValue: 0, TwiceKey())
        #expect(shared.wrappedValue == 1)
        #expect(ContinuationMisuse.count == before + 1)
        await #expect(throws: SharingError.continuationNeverResumed("save of twice")) { try await shared.save() }
        #expect(ContinuationMisuse.count == before + 2)
    }
}

/// docs/sharing.md's CURVE set-up from Swift (`ReplicaLayout.startTrustingEachOther`).
@Suite struct CurveFromSwiftTests {
    @Test func sharedStateReplicatesBetweenCurveNodes() async throws {
        let keys = [try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        let layout = ReplicaLayout(count: 2)
        let replicas = try layout.startTrustingEachOther(keys)
        #expect(await connected(replicas))
        #expect(await replicas[0].status().security == "curve")
        @Shared(.replicated("secret-settings", on: replicas[0])) var onA = Settings()
        @Shared(.replicated("secret-settings", on: replicas[1])) var onB = Settings()
        $onA.cupsPerDay.withLock { $0 = 6 }
        try await $onA.save()
        #expect(await eventually { onB.cupsPerDay == 6 })
    }
}
