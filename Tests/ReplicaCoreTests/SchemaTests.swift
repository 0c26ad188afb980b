import Foundation
import Testing
@testable import ReplicaCore

/// A settings type at schema 2 that knows nothing of schema 3.
struct Profile: VersionedValue, Equatable {
    var displayName: String
    static let schemaVersion: UInt16 = 2
    static let migrations = [SchemaMigration(from: 1) { json in json.rename("name", to: "displayName") }]
}

@Suite struct SchemaTests {
    static let v1Drink = UUID(uuidString: "3F2B8C1E-9D4A-4E61-8B2F-7C5D1A0E9B44")!

    @Test func everyPayloadRecordsItsSchemaVersion() async throws {
        let replica = try makeReplicas(1)[0]
        @Shared(.replicated("profile", on: replica)) var profile = Profile(displayName: "x")
        @Shared(.replicated("plain", on: replica)) var plain = 1
        @Shared(.drinks(on: replica)) var drinks: [Drink] = []
        @Shared(.counter("c", on: replica)) var counter = 0
        $profile.withLock { $0.displayName = "y" }
        $plain.withLock { $0 = 2 }
        $drinks.withLock { $0.append(try! Drink(name: "Cola", mg: 34)) }
        $counter.withLock { $0 += 1 }
        try await $profile.save(); try await $plain.save(); try await $drinks.save(); try await $counter.save()
        #expect(try await replica.entry(for: "profile")?.schema == 2)
        #expect(try await replica.entry(for: "plain")?.schema == 0)
        #expect(try await replica.entries(prefix: Drink.log().prefix).map(\.schema) == [Drink.schemaVersion])
        #expect(try await replica.entries(prefix: FamilyKey.counterPrefix("c")).map(\.schema) == [CounterFamily.slotSchema])
    }

    /// The fixture holds the bytes Coffee Tracker's `Drink` (schema 1) wrote with Foundation's
    /// default JSON coding; they are read through the migration and then verified (Defaults v5 style).
    @Test func aSchema1DrinkIsMigratedOnRead() async throws {
        let bytes = try fixture("drink-v1.json")
        #expect(String(decoding: bytes, as: UTF8.self).contains("mgCaffeine"), "real schema-1 bytes")
        let replica = try makeReplicas(1)[0]
        let log = Drink.log()
        let key = log.key(forID: Self.v1Drink.uuidString.lowercased())
        try await replica.write(key, payload: bytes, schema: 1)
        try await replica.write("favorite", payload: bytes, schema: 1)

        @Shared(.drinks(on: replica)) var drinks: [Drink] = []
        let expected = Drink(unchecked: Self.v1Drink, name: "Espresso", mg: 64, date: date("2024-05-01T08:30:00Z"))
        #expect(drinks == [expected])
        #expect($drinks.loadError == nil)
        @Shared(.replicated("favorite", on: replica)) var favorite = try! Drink(name: "none", mg: 0)
        #expect(favorite == expected)
        #expect(try await replica.entry(for: key)?.payload == bytes, "migration on read does not rewrite the stored bytes")

        // The next save of the element stores the current schema.
        $drinks.withLock { $0[0].mg = 65 }
        try await $drinks.save()
        let saved = try #require(try await replica.entry(for: key))
        #expect(saved.schema == 2)
        #expect(try log.element(in: saved)?.mg == 65)
    }

    @Test func datesRoundTripToTheMillisecond() throws {
        let codec = ReplicatedValueCodec<Drink>()
        for offset in 0..<2000 {
            let drink = try Drink(name: "d", mg: 1, date: Date(timeIntervalSince1970: 1_795_000_000 + Double(offset) * 0.000_37))
            let decoded = try codec.decode(codec.encode(drink, key: "k"), schema: Drink.schemaVersion, key: "k")
            #expect(decoded == drink)
            #expect(try codec.encode(decoded, key: "k") == codec.encode(drink, key: "k"), "stable bytes")
        }
    }

    @Test func aJSONMigrationRenamesAField() throws {
        let codec = ReplicatedValueCodec<Profile>()
        #expect(try codec.decode(Array(#"{"name":"Ada"}"#.utf8), schema: 1, key: "p") == Profile(displayName: "Ada"))
        #expect(try codec.decode(Array(#"{"displayName":"Ada"}"#.utf8), schema: 2, key: "p") == Profile(displayName: "Ada"))
        #expect(throws: SharingError.newerSchema(key: "p", stored: 3, known: 2)) {
            try codec.decode(Array(#"{"display":{"name":"Ada"}}"#.utf8), schema: 3, key: "p")
        }
    }

    /// docs/sharing.md: adding a field to a plain `Codable` type breaks its stored values (the
    /// synthesised decoder ignores defaults); adopting `VersionedValue` with a migration from 0
    /// (plain values are stored at 0) reads them.
    @Test func aFieldAddedToAPlainCodableTypeNeedsAMigrationFromZero() throws {
        struct Plain: Codable, Equatable, Sendable { var name: String; var cups = 3 }
        #expect(throws: (any Error).self) { try ReplicatedValueCodec<Plain>().decode(Array(#"{"name":"bob"}"#.utf8), schema: 0, key: "p") }
        struct Versioned: VersionedValue, Equatable {
            var name: String
            var cups: Int
            static let schemaVersion: UInt16 = 1
            static let migrations = [SchemaMigration(from: 0) { json in json["cups"] = .int(3) }]
        }
        #expect(try ReplicatedValueCodec<Versioned>().decode(Array(#"{"name":"bob"}"#.utf8), schema: 0, key: "p") == Versioned(name: "bob", cups: 3))
    }

    /// A (new program) - B (old program) - C: A and C only talk through B. B must keep the newer
    /// payload, report it, refuse to overwrite it, and pass it on byte for byte.
    @Test func aNewerSchemaPayloadSurvivesARoundTripThroughAnOlderNode() async throws {
        let layout = ReplicaLayout(count: 3, links: [[1], [0, 2], [1]])
        let (a, b) = (try layout.start(0), try layout.start(1))
        #expect(await connected([a, b]))
        @Shared(.replicated("profile", on: b)) var profile = Profile(displayName: "initial")
        @Shared(.drinks(on: b)) var drinksOnB: [Drink] = []
        let newerProfile = Array(#"{"display":{"first":"Ada","last":"Lovelace"}}"#.utf8)
        let drinkID = UUID()
        let newerDrink = Array(#"{"id":"\#(drinkID.uuidString)","name":"Flat white","caffeine":{"mg":130,"source":"espresso"},"date":"2024-05-01T08:30:00.000Z"}"#.utf8)
        let drinkKey = Drink.log().key(forID: drinkID.uuidString.lowercased())
        let written = try await a.write([
            .init(key: "profile", payload: newerProfile, schema: 3),
            .init(key: drinkKey, payload: newerDrink, schema: Drink.schemaVersion + 1),
        ])

        #expect(await eventually { $profile.loadError != nil && $drinksOnB.loadError != nil })
        #expect($profile.loadError as? SharingError == .newerSchema(key: #".replicated("profile")"#, stored: 3, known: 2))
        #expect(profile == Profile(displayName: "initial"), "nothing is made up from bytes we cannot read")
        #expect(drinksOnB.isEmpty)
        #expect(try await b.entry(for: "profile") == written[0])
        #expect(try await b.entry(for: drinkKey) == written[1])
        #expect(try await b.quarantined(key: "profile").isEmpty, "valid newer data is not treated as corrupt")
        #expect(await eventually { await b.status().loadErrors.count == 2 })

        // The old node refuses to overwrite the newer value.
        $profile.withLock { $0.displayName = "from the old node" }
        await #expect(throws: SharingError.newerSchema(key: #".replicated("profile")"#, stored: 3, known: 2)) { try await $profile.save() }
        #expect($profile.saveError != nil)
        #expect(try await b.entry(for: "profile") == written[0])
        #expect(await eventually { await b.status().saveErrors.map(\.subject) == ["profile"] }, "the refusal is listed in status")

        // C, which only hears from B, gets both entries exactly as A wrote them.
        let c = try layout.start(2)
        #expect(try await eventually {
            let (profile, drink) = (try await c.entry(for: "profile"), try await c.entry(for: drinkKey))
            return profile == written[0] && drink == written[1]
        })
        #expect(await eventually { await a.status().digest == c.status().digest })
        #expect(await b.status().digest == a.status().digest)
    }
}
