import Foundation
import Testing
@testable import ReplicaCore

/// The rows of docs/sharing.md's table that compare Sharing 2.0's `Shared`/`SharedReader`
/// surface with ours, each shown to compile and behave.
@Suite struct SharingSurfaceTests {
    @Test func aWritableMemberIsASharedThatWritesThroughTheRootAndReplicates() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.replicated("settings", on: replicas[0])) var onA = Settings()
        @Shared(.replicated("settings", on: replicas[1])) var onB = Settings()
        let theme: Shared<Settings.Theme> = $onA.theme
        theme.withLock { $0 = .dark }
        #expect(onA.theme == .dark, "the root changed")
        try await theme.save()
        #expect(await eventually { onB.theme == .dark })
        #expect(try await replicas[1].entry(for: "settings")?.payload == Array(#"{"cupsPerDay":3,"theme":"dark"}"#.utf8))
    }

    @Test func aReadOnlyMemberIsASharedReader() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.drinks(on: replica)) var drinks: [Drink] = []
        let count: SharedReader<Int> = $drinks.count
        #expect(count.wrappedValue == 0)
        $drinks.withLock { $0.append(try! Drink(name: "Tea", mg: 30)) }
        #expect(count.wrappedValue == 1)
        let names = $drinks.read { $0.map(\.name) }
        #expect(names.wrappedValue == ["Tea"])
    }

    @Test func anOptionalUnwrapsToAShared() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("favorite", on: replica)) var favorite: Settings? = Settings()
        let unwrapped = try #require(Shared($favorite))
        unwrapped.withLock { $0.cupsPerDay = 4 }
        #expect(favorite?.cupsPerDay == 4, "writes go to the optional")
        $favorite.withLock { $0 = nil }
        #expect(Shared($favorite) == nil)
        #expect(unwrapped.wrappedValue.cupsPerDay == 4, "the last value is kept")
        #expect(SharedReader($favorite) == nil)
        @Shared(.replicated("absent-favorite", on: replica)) var absent: Settings?
        #expect(absent == nil)
    }

    @Test func sharedValuesAreEqualWhenTheirValuesAre() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("a", on: replica)) var a = 1
        @Shared(.replicated("b", on: replica)) var b = 1
        #expect($a == $b)
        $b.withLock { $0 = 2 }
        #expect($a != $b)
        #expect($a.reader != $b.reader)

        struct Feature: Equatable {
            @Shared var count: Int
        }
        let one = Feature(count: Shared(value: 3))
        #expect(one == Feature(count: Shared(value: 3)))
        #expect(one != Feature(count: Shared(value: 4)))
    }

    @Test func anIdentifiableValueMakesAnIdentifiableShared() throws {
        let drink = try Drink(name: "Latte", mg: 75)
        let shared = Shared(value: drink)
        #expect(shared.id == drink.id)
        #expect(SharedReader(shared).id == drink.id)
    }

    @Test func aSharedReaderOfASharedSeesItsChanges() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("read-through", on: replica)) var count = 0
        let reader = SharedReader($count)
        $count.withLock { $0 = 9 }
        #expect(reader.wrappedValue == 9)
        @SharedReader(.replicated("read-through", on: replica)) var alsoCount = 0
        #expect(alsoCount == 9, "a reader of the same key is the same state")
    }

    @Test func loadingAnotherKeyPointsEveryCopyAtIt() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("profile-b", payload: Array("20".utf8))
        @Shared(.replicated("profile-a", on: replica)) var value = 10
        let copy = $value
        try await $value.load(.replicated("profile-b", on: replica))
        #expect(value == 20)
        #expect(copy.wrappedValue == 20)
        $value.withLock { $0 += 1 }
        try await $value.save()
        #expect(try await replica.entry(for: "profile-b")?.payload == Array("21".utf8))
        #expect(try await replica.entry(for: "profile-a") == nil)
        // A key with nothing stored keeps the current value.
        try await $value.load(.replicated("profile-c", on: replica))
        #expect(value == 21)
    }

    @Test func assigningTheProjectedValueRebindsTheState() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("first", on: replica)) var value = 1
        $value = Shared(value: 5)
        #expect(value == 5)
    }

    @Test func aKeyWithADefaultNeedsNoInitialValue() async throws {
        let replica = try makeReplicas(1)[0]
        let key = ReplicatedKey<Int>.Default[.replicated("defaulted", on: replica), default: 42]
        @Shared(key) var value
        #expect(value == 42)
        $value.withLock { $0 += 1 }
        try await $value.save()
        @SharedReader(key) var reader
        #expect(reader == 43)
    }

    @Test func readersAreMadeAsInSharing() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("stored-reader", payload: Array("8".utf8))
        let required = try await SharedReader<Int>(require: .replicated("stored-reader", on: replica))
        #expect(required.wrappedValue == 8)
        await #expect(throws: SharingError.noValue(key: #".replicated("missing-reader")"#)) {
            _ = try await SharedReader<Int>(require: .replicated("missing-reader", on: replica))
        }
        #expect(SharedReader(value: 3).wrappedValue == 3)
        let optional = SharedReader<Int?>(value: 4)
        #expect(SharedReader(optional)?.wrappedValue == 4)
        try await required.load(.replicated("another-reader", on: replica))
        #expect(required.wrappedValue == 8, "nothing stored there: the current value stays")
    }

    @Test func aSharedParameterTakesAProjectedValue() {
        func visit(@Shared count: Int) { $count.withLock { $0 += 1 } }
        let count = Shared(value: 1)
        visit($count: count)
        #expect(count.wrappedValue == 2)
    }

    @Test func contextsAndKeyIDsAreHashable() {
        #expect(Set([LoadContext.initialValue(1), .initialValue(1), .userInitiated]).count == 2)
        #expect(Set([SaveContext.didSet, .userInitiated, .didSet]).count == 2)
        #expect(InMemoryKey<Int>(name: "x") == InMemoryKey<Int>(name: "x"))
        #expect(ReplicatedKey<Int>("k", on: nil).id == ReplicatedKey<Int>("k", on: nil).id)
        #expect(CounterKey(CounterFamily("k"), on: nil).id != CounterKey(CounterFamily("j"), on: nil).id)
    }

    #if canImport(Combine)
    @Test func aPublisherEmitsTheCurrentValueThenChanges() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("published", on: replica)) var count = 0
        let seen = Mutex<[Int]>([])
        let cancellable = $count.publisher.sink { value in seen.withLock { $0.append(value) } }
        $count.withLock { $0 = 1 }
        $count.withLock { $0 = 2 }
        #expect(seen.withLock { $0 } == [0, 1, 2])
        cancellable.cancel()
    }
    #endif
}

#if canImport(Combine)
import Combine
import Synchronization
#endif
