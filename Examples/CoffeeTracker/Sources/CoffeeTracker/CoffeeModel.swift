import Foundation
import Observation
import ReplicaCore

/// What the user chooses, replicated as one value: the last writer wins on every node.
struct CoffeeSettings: Codable, Equatable, Sendable {
    var dailyLimitMg: Double = 400
    var favoriteDrink = "Espresso"
}

/// The UI model of Apple's Coffee Tracker sample, over replicated state: a SwiftUI view (or any
/// `withObservationTracking` caller) that reads it updates on local and remote changes.
///
/// The `@Shared` properties are `@ObservationIgnored`: `Shared` takes part in Observation itself.
/// They use the process default replica, so the model can be made before `Replica.setDefault`
/// (as `@State var model = CoffeeModel()` in an `App` is): they bind when it is set.
@MainActor
@Observable
final class CoffeeModel {
    @ObservationIgnored @Shared(.replicated("settings")) var settings = CoffeeSettings()
    @ObservationIgnored @Shared(.counter("visits")) var visits = 0
    @ObservationIgnored @Shared(.drinks()) var drinks: [Drink] = []

    /// Caffeine of the drinks logged since `start`, in milligrams.
    func caffeine(since start: Date) -> Double {
        drinks.filter { $0.date >= start }.reduce(0) { $0 + $1.mg }
    }

    func recordVisit() {
        $visits.withLock { $0 += 1 }
    }

    func log(_ drink: Drink) {
        $drinks.withLock { $0.append(drink) }
    }

    /// Changes a member of the shared settings (the whole value is saved and replicated) and
    /// returns once it is durable.
    func setDailyLimit(_ mg: Double) async throws {
        $settings.dailyLimitMg.withLock { $0 = mg }
        try await $settings.save()
    }

    /// Waits until the visits and drinks recorded here are durable; throws the first save error.
    /// (Counters and logs save only what changed. Settings are not saved here: a register's
    /// value as stored is not written again, but one never stored (the initial value, before
    /// another device's choice arrives) would be, and would overwrite that choice.)
    func saveRecords() async throws {
        try await $visits.save()
        try await $drinks.save()
    }

    /// Problems to show the user, if any.
    var problems: [String] {
        [$settings.loadError, $settings.saveError, $visits.loadError, $visits.saveError, $drinks.loadError, $drinks.saveError]
            .compactMap { $0.map { "\($0)" } }
    }
}
