import Foundation
import Observation
import Synchronization
import Testing
@testable import ReplicaCore

/// Whether something read inside `withObservationTracking` has changed since.
final class ObservationFlag: Sendable {
    private let fired = Mutex(false)
    var hasFired: Bool { fired.withLock { $0 } }

    /// Tracks what `read` reads; the flag goes up on the first change of any of it.
    init(tracking read: () -> Void) {
        withObservationTracking(read) { [self] in fired.withLock { $0 = true } }
    }
}

/// Seed 001's shape: an `@Observable` model holding shared state that Observation ignores
/// (the `Shared` itself takes part in Observation).
@Observable final class CounterModel {
    @ObservationIgnored @Shared var count: Int
    @ObservationIgnored @Shared var settings: Settings

    init(on replica: Replica) {
        _count = Shared(wrappedValue: 0, .replicated("observed", on: replica))
        _settings = Shared(wrappedValue: Settings(), .replicated("observed-settings", on: replica))
    }
}

struct Settings: Codable, Equatable, Sendable {
    enum Theme: String, Codable, Sendable { case light, dark }
    var theme = Theme.light
    var cupsPerDay = 3
}

@Suite struct ObservationTests {
    @Test func aLocalChangeFiresObservationOfABareShared() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("bare", on: replica)) var count = 0
        let flag = ObservationFlag { _ = count }
        #expect(!flag.hasFired)
        $count.withLock { $0 += 1 }
        #expect(flag.hasFired, "withLock fires observers before it returns")
    }

    @Test func aRemoteChangeFiresObservationOfABareShared() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.replicated("bare-remote", on: replicas[1])) var onB = 0
        let flag = ObservationFlag { _ = onB }
        try await replicas[0].write("bare-remote", payload: Array("7".utf8))
        #expect(await eventually { flag.hasFired })
        #expect(onB == 7)
    }

    /// Observers are told once the new value is in place, local or remote: one that reads it
    /// when told (or, as usual, from a task on its actor, which may run at once on another
    /// thread) sees it. Told at `willSet`, such an observer could read the old value, track it
    /// again, and miss the change for good (an outside tester: 8 of 30 remote changes).
    @Test func anObserverToldOfAChangeReadsTheNewValue() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.replicated("told", on: replicas[1])) var onB = 0
        let seen = Mutex<[Int]>([])
        let reference = $onB
        withObservationTracking { _ = reference.wrappedValue } onChange: { seen.withLock { $0.append(reference.wrappedValue) } }
        try await replicas[0].write("told", payload: Array("7".utf8))
        #expect(await eventually { !seen.withLock { $0.isEmpty } })
        #expect(seen.withLock { $0 } == [7], "a remote change")
        withObservationTracking { _ = reference.wrappedValue } onChange: { seen.withLock { $0.append(reference.wrappedValue) } }
        $onB.withLock { $0 = 8 }
        #expect(seen.withLock { $0 } == [7, 8], "a local change")
    }

    @Test func anObservableModelSeesLocalAndRemoteChanges() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let model = CounterModel(on: replicas[1])
        let local = ObservationFlag { _ = model.count }
        model.$count.withLock { $0 += 1 }
        #expect(local.hasFired)
        try await model.$count.save()
        // The remote write must come after A has the local one, or the two are concurrent.
        #expect(try await eventually { try await replicas[0].entry(for: "observed")?.payload == Array("1".utf8) })

        let remote = ObservationFlag { _ = model.count }
        try await replicas[0].write("observed", payload: Array("41".utf8))
        #expect(await eventually { remote.hasFired })
        #expect(await eventually { model.count == 41 })
    }

    @Test func aDerivedSharedIsObservedThroughItsRoot() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let model = CounterModel(on: replicas[1])
        let theme = model.$settings.theme
        let flag = ObservationFlag { _ = theme.wrappedValue }
        try await replicas[0].write("observed-settings", payload: Array(#"{"cupsPerDay":3,"theme":"dark"}"#.utf8))
        #expect(await eventually { flag.hasFired })
        #expect(await eventually { theme.wrappedValue == .dark })
    }

    @Test func countersAndLogsFireObservationForRemoteChanges() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.counter("observed-visits", on: replicas[1])) var visits = 0
        @Shared(.drinks("observed-drinks", on: replicas[1])) var drinks: [Drink] = []
        let counter = ObservationFlag { _ = visits }
        let log = ObservationFlag { _ = drinks }
        try await replicas[0].addToCounter("observed-visits", delta: 2)
        try await replicas[0].write([Drink.log("observed-drinks").put(try Drink(name: "Mocha", mg: 90))])
        #expect(await eventually { counter.hasFired && log.hasFired })
        #expect(await eventually { visits == 2 && drinks.map(\.name) == ["Mocha"] })
    }

    @Test func loadAndSaveStatusIsObserved() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.replicated("status-observed", on: replicas[1])) var value = 0
        let flag = ObservationFlag { _ = $value.loadError }
        try await replicas[0].write("status-observed", payload: Array("not json".utf8))
        #expect(await eventually { flag.hasFired && $value.loadError != nil })
    }

    @Test func valuesStreamsADerivedMember() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("streamed", on: replica)) var settings = Settings()
        let cups = $settings.cupsPerDay.values
        $settings.withLock { $0.theme = .dark }
        $settings.cupsPerDay.withLock { $0 = 5 }
        #expect(await first(cups) { $0 == 5 } == 5)
    }
}
