import Foundation

/// Turns values into the payload bytes of replicated entries (JSON with sorted keys, so equal
/// values give equal bytes and equal digests) and back, migrating older schemas on the way in.
struct ReplicatedValueCodec<Value: Codable & Sendable>: Sendable {
    /// The schema version recorded with every payload: `Value.schemaVersion` for a
    /// `VersionedValue`, else 0 (the type declares none).
    var schema: UInt16 { (Value.self as? any VersionedValue.Type)?.schemaVersion ?? 0 }

    private var migrations: [SchemaMigration] { (Value.self as? any VersionedValue.Type)?.migrations ?? [] }

    func encode(_ value: Value) throws -> [UInt8] {
        Array(try ReplicatedJSON.encoder().encode(value))
    }

    /// Decodes a payload stored with `schema`: migrated first if older, refused if newer
    /// (`SharingError.newerSchema`: the bytes must be kept and forwarded, not reinterpreted).
    func decode(_ payload: [UInt8], schema stored: UInt16, key: String) throws -> Value {
        let known = schema
        guard stored <= known else { throw SharingError.newerSchema(key: key, stored: stored, known: known) }
        var data = Data(payload)
        if stored < known {
            data = try migrate(data, from: stored, to: known, key: key)
        }
        do {
            return try ReplicatedJSON.decoder().decode(Value.self, from: data)
        } catch {
            throw SharingError.undecodable(key: key, reason: Self.describe(error))
        }
    }

    private func migrate(_ data: Data, from stored: UInt16, to known: UInt16, key: String) throws -> Data {
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
            throw SharingError.undecodable(key: key, reason: "migration from schema \(version) failed: \(Self.describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.typeMismatch(let type, let context): "expected \(type) at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.keyNotFound(let key, _): "missing field \(key.stringValue)"
        case DecodingError.valueNotFound(let type, _): "missing \(type)"
        default: "\(error)"
        }
    }
}
