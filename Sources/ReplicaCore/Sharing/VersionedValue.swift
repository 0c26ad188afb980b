import Foundation

/// A value type whose stored form has a schema version and migrations from older versions,
/// in the spirit of Defaults v5's migration: old bytes are migrated when read, then decoded.
///
/// ```swift
/// struct Drink: VersionedValue {
///     static let schemaVersion: UInt16 = 2
///     static let migrations = [SchemaMigration(from: 1) { json in json.rename("uuid", to: "id") }]
///     ...
/// }
/// ```
///
/// Rules (see docs/sharing.md, "Schemas and migrations"):
/// - every payload is stored with its type's `schemaVersion` in `Entry.schema` (0 for types
///   that do not adopt this protocol);
/// - a payload of an older schema `n` is passed through the migrations from `n`, `n + 1`, ...
///   up to `schemaVersion` (a version without a migration is taken as unchanged), then decoded.
///   Migration happens on read only; the stored bytes change the next time the value is saved;
/// - a payload of a *newer* schema is never decoded or rewritten: it is kept and forwarded as is,
///   the key reports `SharingError.newerSchema` as its `loadError`, and saving over it is refused.
public protocol VersionedValue: Codable, Sendable {
    /// The version of the stored form this program writes (1 or more).
    static var schemaVersion: UInt16 { get }
    /// Steps from older stored forms to newer ones; each migrates `from` to `from + 1`.
    static var migrations: [SchemaMigration] { get }
}

extension VersionedValue {
    public static var migrations: [SchemaMigration] { [] }
}

/// One migration step: turns the JSON of schema `from` into the JSON of schema `from + 1`.
public struct SchemaMigration: Sendable {
    public let from: UInt16
    let body: @Sendable (inout JSONValue) throws -> Void

    /// A step that edits the stored JSON in place.
    public init(from: UInt16, _ body: @escaping @Sendable (inout JSONValue) throws -> Void) {
        self.from = from
        self.body = body
    }

    /// A step that decodes the old form as `Old` (with the given date strategy), converts it, and
    /// encodes the result as the next form.
    public static func decoding<Old: Decodable & Sendable, New: Encodable & Sendable>(
        _ old: Old.Type, from: UInt16, dates: JSONDecoder.DateDecodingStrategy = .deferredToDate,
        _ convert: @escaping @Sendable (Old) throws -> New
    ) -> SchemaMigration {
        SchemaMigration(from: from) { json in
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = dates
            let oldValue = try decoder.decode(Old.self, from: try JSONEncoder().encode(json))
            json = try JSONDecoder().decode(JSONValue.self, from: ReplicatedJSON.encoder().encode(try convert(oldValue)))
        }
    }
}

/// Any JSON value, for migrations that reshape stored JSON.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int.self) { self = .int(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// A member of an object (nil for other values); setting nil removes it.
    public subscript(key: String) -> JSONValue? {
        get { if case .object(let members) = self { members[key] } else { nil } }
        set {
            guard case .object(var members) = self else { return }
            members[key] = newValue
            self = .object(members)
        }
    }

    /// Moves an object member to a new name (no effect if it is absent).
    public mutating func rename(_ old: String, to new: String) {
        guard let value = self[old] else { return }
        self[old] = nil
        self[new] = value
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
}

/// The JSON form of replicated values: sorted keys (equal values, equal bytes, equal digests)
/// and ISO 8601 dates with milliseconds (plain ISO 8601 without them is read too).
enum ReplicatedJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Self.string(from: date))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = try? Self.withMilliseconds.parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid ISO 8601 date: \(text)")
        }
        return decoder
    }

    static let withMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// ISO 8601 with the date rounded to the nearest millisecond. The formatter truncates, and a
    /// date made from whole milliseconds may be a hair below them as a Double: nudge by 0.5 µs.
    static func string(from date: Date) -> String {
        let millis = (date.timeIntervalSince1970 * 1000).rounded()
        return Date(timeIntervalSince1970: millis / 1000 + 0.000_000_5).formatted(withMilliseconds)
    }
}
