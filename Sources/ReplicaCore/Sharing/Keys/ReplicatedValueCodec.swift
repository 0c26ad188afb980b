import Foundation

/// Turns values into the payload bytes of replicated entries (JSON with sorted keys, so equal
/// values give equal bytes and equal digests) and back, migrating older schemas on the way in.
/// Errors name what holds the value (`key`) and the path to the offending field.
struct ReplicatedValueCodec<Value: Codable & Sendable>: Sendable {
    /// The schema version recorded with every payload: `Value.schemaVersion` for a
    /// `VersionedValue`, else 0 (the type declares none).
    var schema: UInt16 { (Value.self as? any VersionedValue.Type)?.schemaVersion ?? 0 }

    private var migrations: [SchemaMigration] { (Value.self as? any VersionedValue.Type)?.migrations ?? [] }

    func encode(_ value: Value, key: String) throws(SharingError) -> [UInt8] {
        let data: Data
        do {
            data = try ReplicatedJSON.encoder().encode(value)
        } catch {
            throw .unencodable(key: key, reason: Self.describe(error))
        }
        // What is stored must read back. A type whose decoder refuses what its encoder wrote (a
        // `Drink` whose `mg` was set negative) was stored anyway: every member then failed to
        // read it, and it vanished from the writer's own log at its next load.
        do {
            _ = try ReplicatedJSON.decoder().decode(Value.self, from: data)
        } catch {
            throw .unencodable(key: key, reason: "it would not read back: " + Self.describe(error))
        }
        return Array(data)
    }

    /// Decodes a payload stored with `schema`: migrated first if older, refused if newer
    /// (`SharingError.newerSchema`: the bytes must be kept and forwarded, not reinterpreted).
    func decode(_ payload: [UInt8], schema stored: UInt16, key: String) throws(SharingError) -> Value {
        let known = schema
        guard stored <= known else { throw .newerSchema(key: key, stored: stored, known: known) }
        var data = Data(payload)
        if stored < known {
            data = try migrate(data, from: stored, to: known, key: key)
        }
        do {
            return try ReplicatedJSON.decoder().decode(Value.self, from: data)
        } catch {
            throw .undecodable(key: key, reason: Self.describe(error))
        }
    }

    private func migrate(_ data: Data, from stored: UInt16, to known: UInt16, key: String) throws(SharingError) -> Data {
        let steps = migrations
        guard steps.contains(where: { $0.from >= stored && $0.from < known }) else { return data }
        var version = stored
        do {
            var json = try JSONDecoder().decode(JSONValue.self, from: data)
            while version < known {
                for step in steps where step.from == version { try step.body(&json) }
                version += 1
            }
            return try ReplicatedJSON.encoder().encode(json)
        } catch {
            throw .undecodable(key: key, reason: "migration from schema \(version) failed: \(Self.describe(error))")
        }
    }

    /// A coding error as a sentence with the path to the field: `expected String at
    /// drinks[2].name, found a number`.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            "expected \(type) at \(path(context.codingPath))\(found(context))"
        case DecodingError.valueNotFound(let type, let context):
            "expected \(type) at \(path(context.codingPath)), found null"
        case DecodingError.keyNotFound(let key, let context):
            "missing field \"\(key.stringValue)\" at \(path(context.codingPath))"
        case DecodingError.dataCorrupted(let context):
            "\(sentence(context.debugDescription, underlying: context.underlyingError)) at \(path(context.codingPath))"
        case EncodingError.invalidValue(let value, let context):
            "\(value) cannot be encoded at \(path(context.codingPath)): \(context.debugDescription)"
        default:
            "\(error)"
        }
    }

    /// `theme`, `drinks[2].name`; `the top level` for the value itself.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "the top level" : text
    }

    /// Foundation's "Expected to decode String but found a number instead." as ", found a number".
    private static func found(_ context: DecodingError.Context) -> String {
        guard let range = context.debugDescription.range(of: "but found "),
              let end = context.debugDescription.range(of: " instead", range: range.upperBound..<context.debugDescription.endIndex)
        else { return "" }
        return ", found " + context.debugDescription[range.upperBound..<end.lowerBound]
    }

    private static func sentence(_ description: String, underlying: (any Error)?) -> String {
        let trimmed = description.hasSuffix(".") ? String(description.dropLast()) : description
        guard let underlying else { return trimmed }
        return "\(trimmed) (\(underlying.localizedDescription))"
    }
}
