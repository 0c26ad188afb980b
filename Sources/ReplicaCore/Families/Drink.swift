import Foundation

/// A caffeinated drink, as in Apple's Coffee Tracker sample: what, how much caffeine, when.
///
/// Schema history (`VersionedValue`):
/// - 1: Coffee Tracker's own encoding: `{"uuid", "name", "mgCaffeine", "date"}` with the date
///   as seconds since 2001-01-01 (Foundation's default `Date` coding).
/// - 2 (current): `{"id", "name", "mg", "date"}` with the date in ISO 8601 (milliseconds).
public struct Drink: VersionedValue, Identifiable, Hashable {
    public var id: UUID
    public var name: String
    /// Caffeine in milligrams (0 or more).
    public var mg: Double
    public var date: Date

    public static let schemaVersion: UInt16 = 2

    public static let migrations: [SchemaMigration] = [
        .decoding(DrinkV1.self, from: 1) { old in
            Drink(unchecked: old.uuid, name: old.name, mg: old.mgCaffeine, date: old.date)
        }
    ]

    /// Why a drink is invalid.
    public enum Invalid: Error, Equatable, CustomStringConvertible {
        case negativeCaffeine(Double)
        case emptyName
        public var description: String {
            switch self {
            case .negativeCaffeine(let mg): "caffeine must be 0 mg or more (got \(mg))"
            case .emptyName: "a drink needs a name"
            }
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, name, mg, date
    }

    /// A validated drink; the date is kept to the millisecond (what is stored).
    public init(id: UUID = UUID(), name: String, mg: Double, date: Date = Date()) throws(Invalid) {
        guard mg >= 0, mg.isFinite else { throw .negativeCaffeine(mg) }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw .emptyName }
        self.init(unchecked: id, name: name, mg: mg, date: date)
    }

    init(unchecked id: UUID, name: String, mg: Double, date: Date) {
        self.id = id
        self.name = name
        self.mg = mg
        self.date = Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        mg = try container.decode(Double.self, forKey: .mg)
        date = try container.decode(Date.self, forKey: .date)
        guard mg >= 0, mg.isFinite else {
            throw DecodingError.dataCorruptedError(forKey: .mg, in: container, debugDescription: Invalid.negativeCaffeine(mg).description)
        }
        // A blank name is read, as 0.25 and older stored it (`name` is a `var`); refusing it
        // here, or when a drink is encoded (for a control reply too), hid or hung a whole list.
    }

    /// The date as stored: whole milliseconds since 1970.
    public var dateMillis: Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// Equal at the precision that is stored (dates to the millisecond), so that a drink read
    /// back from storage equals the one written.
    public static func == (a: Drink, b: Drink) -> Bool {
        a.id == b.id && a.name == b.name && a.mg == b.mg && a.dateMillis == b.dateMillis
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(name)
        hasher.combine(mg)
        hasher.combine(dateMillis)
    }

    /// The drink log shared by every node: `.log("drinks")`, ordered by date then id.
    public static func log(_ name: String = "drinks") -> LogFamily<Drink> {
        LogFamily(name, id: \.id, orderedBy: \.date)
    }
}

/// Schema 1 of `Drink` (Coffee Tracker's shape), decoded only to migrate it.
struct DrinkV1: Decodable {
    var uuid: UUID
    var name: String
    var mgCaffeine: Double
    var date: Date
}

extension SharedReaderKey {
    /// The drink log: `@Shared(.drinks()) var drinks: [Drink] = []`, ordered by date then id.
    public static func drinks(_ name: String = "drinks", on replica: Replica? = nil) -> Self where Self == LogKey<Drink> {
        LogKey(Drink.log(name), on: replica)
    }
}
