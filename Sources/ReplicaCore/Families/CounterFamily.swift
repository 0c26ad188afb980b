import Foundation

/// A counter as stored: one slot per replica incarnation, each holding that incarnation's running
/// total as a JSON integer; the counter's value is the sum of the slots.
///
/// Only the owner writes its slot, so concurrent increments on different nodes touch different
/// entries and never conflict; a node whose data directory is wiped gets a new incarnation, hence
/// a new slot, and its old increments stay counted in the old one.
public enum CounterFamily {
    /// The schema version of a slot payload (a JSON integer).
    public static let slotSchema: UInt16 = 1

    /// The total held by one slot; a tombstone counts as 0.
    public static func total(of entry: Entry) throws(SharingError) -> Int {
        guard let payload = entry.payload else { return 0 }
        guard entry.schema <= slotSchema else {
            throw .newerSchema(key: entry.key, stored: entry.schema, known: slotSchema)
        }
        guard let text = String(validating: payload, as: UTF8.self),
              let total = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw .undecodable(key: entry.key, reason: "a counter slot must hold a JSON integer")
        }
        return total
    }

    static func payload(_ total: Int) -> [UInt8] { Array(String(total).utf8) }

    /// The value and slots of counter `name`, from the entries under its prefix. Slots that
    /// cannot be read are left out of the sum and listed in `problems`.
    public static func snapshot(_ name: String, entries: [Entry]) -> CounterSnapshot {
        let prefix = FamilyKey.counterPrefix(name)
        var snapshot = CounterSnapshot(name: name, value: 0, slots: [], problems: [])
        for entry in entries where entry.key.hasPrefix(prefix) {
            do {
                let total = try total(of: entry)
                snapshot.value &+= total
                snapshot.slots.append(.init(
                    incarnation: String(entry.key.dropFirst(prefix.count)), node: entry.version.node.rawValue, total: total))
            } catch {
                snapshot.problems.append(error.description)
            }
        }
        return snapshot
    }
}

/// A counter's value and where it comes from.
public struct CounterSnapshot: Sendable, Equatable, Codable {
    public struct Slot: Sendable, Equatable, Codable {
        /// The incarnation (data directory) that owns the slot.
        public var incarnation: String
        /// The node that wrote it.
        public var node: String
        public var total: Int
    }

    public var name: String
    /// The sum of every readable slot.
    public var value: Int
    public var slots: [Slot]
    /// Slots left out of the sum (undecodable, or from a newer schema; their bytes are kept).
    public var problems: [String]
}
