import Foundation

/// Turns values into the payload bytes of replicated entries (JSON with sorted keys, so equal
/// values give equal bytes and equal digests) and back.
struct ReplicatedValueCodec<Value: Codable & Sendable>: Sendable {
    /// The schema version recorded with every payload (0: the type declares none).
    var schema: UInt16 { 0 }

    func encode(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(value))
    }

    func decode(_ payload: [UInt8], schema: UInt16, key: String) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(Value.self, from: Data(payload))
        } catch {
            throw SharingError.undecodable(key: key, reason: Self.describe(error))
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
