import Foundation
import Testing
@testable import ReplicaCore

/// Errors speak the user's terms: key names as written in code, counter and log names, element
/// ids, and paths to the offending field; never internal slot keys or object identifiers.
@Suite struct MessageTests {
    static func isInternal(_ message: String) -> Bool {
        message.contains(FamilyKey.marker) || message.contains("␟") || message.contains("ObjectIdentifier")
    }

    @Test func aMissingValueIsNamedAsInCode() async throws {
        let replica = try makeReplicas(1)[0]
        do {
            _ = try await Shared<Int>(require: .replicated("absent-key", on: replica))
            Issue.record("require should throw")
        } catch {
            #expect("\(error)" == #"no value is stored for .replicated("absent-key")"#)
        }
    }

    @Test func aDecodingErrorNamesTheKeyAndThePathToTheField() async throws {
        let replica = try makeReplicas(1)[0]
        try await replica.write("settings", payload: Array(#"{"cupsPerDay":"three","theme":"dark"}"#.utf8))
        @Shared(.replicated("settings", on: replica)) var settings = Settings()
        let message = try #require($settings.loadError.map { "\($0)" })
        #expect(message.hasPrefix("the value of .replicated(\"settings\") cannot be decoded (kept aside): expected Int at cupsPerDay"), "\(message)")

        struct Shelf: Codable, Sendable { var drinks: [Drink] }
        try await replica.write("shelf", payload: Array(#"{"drinks":[{"id":"3F2B8C1E-9D4A-4E61-8B2F-7C5D1A0E9B44","name":"x","mg":1}]}"#.utf8))
        @Shared(.replicated("shelf", on: replica)) var shelf = Shelf(drinks: [])
        let missing = try #require($shelf.loadError.map { "\($0)" })
        #expect(missing.contains(#"missing field "date" at drinks[0]"#), "\(missing)")

        try await replica.write("count", payload: Array(#""many""#.utf8))
        @Shared(.replicated("count", on: replica)) var count = 0
        let top = try #require($count.loadError.map { "\($0)" })
        #expect(top.contains("expected Int at the top level"), "\(top)")
    }

    @Test func counterErrorsNameTheCounter() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        @Shared(.counter("clicks", on: replicas[1])) var clicks = 0
        let slot = FamilyKey.counterSlot("clicks", incarnation: replicas[0].identity.incarnation)
        try await replicas[0].write(slot, payload: Array("not a number".utf8), schema: CounterFamily.slotSchema)
        #expect(await eventually { $clicks.loadError != nil })
        let message = "\($clicks.loadError!)"
        #expect(message.contains("counter clicks") && !Self.isInternal(message), "\(message)")
        #expect(await eventually { await replicas[1].status().loadErrors.map(\.subject) == ["counter clicks"] })

        // A newer program's slot: the refusal names the counter, and status lists it.
        let own = FamilyKey.counterSlot("clicks", incarnation: replicas[1].identity.incarnation)
        try await replicas[1].write(own, payload: Array("5".utf8), schema: CounterFamily.slotSchema + 1)
        $clicks.withLock { $0 += 1 }
        await #expect(throws: SharingError.newerSchema(key: "counter clicks", stored: 2, known: 1)) { try await $clicks.save() }
        #expect(await eventually { await replicas[1].status().saveErrors.map(\.subject) == ["counter clicks"] })
    }

    /// A failed commit's error (disk full) names the counter or log element, not its entry key.
    @Test func saveFailuresNameTheCounterOrElement() {
        let slot = FamilyKey.counterSlot("clicks", incarnation: UUID())
        let counter = ReplicaError.saveFailed(key: slot, reason: "disk is full").description
        #expect(counter == "could not save counter clicks: disk is full")
        let element = ReplicaError.saveFailed(key: FamilyKey.logElement("drinks", id: "e1"), reason: "disk is full").description
        #expect(element == "could not save element e1 of log drinks: disk is full")
        #expect(!Self.isInternal(counter) && !Self.isInternal(element))
        #expect(ReplicaError.saveFailed(key: "notes", reason: "disk is full").description == "could not save notes: disk is full")
    }

    @Test func logErrorsNameTheElement() async throws {
        let replica = try makeReplicas(1)[0]
        let log = Drink.log()
        let id = "3f2b8c1e-9d4a-4e61-8b2f-7c5d1a0e9b44"
        try await replica.write(log.key(forID: id), payload: Array(#"{"broken":true}"#.utf8), schema: Drink.schemaVersion)
        @Shared(.drinks(on: replica)) var drinks: [Drink] = []
        #expect(await eventually { $drinks.loadError != nil })
        let message = try #require($drinks.loadError.map { "\($0)" })
        #expect(message.hasPrefix("the value of element \(id) of log drinks cannot be decoded"), "\(message)")
        #expect(!Self.isInternal(message))
        #expect(await eventually { await replica.status().loadErrors.map(\.subject) == ["element \(id) of log drinks"] })
    }

    @Test func internalKeysReadAsSubjects() {
        #expect(FamilyKey.subject(of: FamilyKey.counterSlot("a/b", incarnation: UUID())) == "counter a/b")
        #expect(FamilyKey.subject(of: FamilyKey.logElement("drinks", id: "x/y")) == "element x/y of log drinks")
        #expect(FamilyKey.subject(of: "plain") == "plain")
    }
}
