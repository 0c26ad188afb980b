import Foundation

/// A counter as stored: one slot per replica incarnation (or per run after one that did not stop
/// cleanly), each holding its owner's running total as a JSON integer; the counter's value is the sum of the slots.
///
/// Only the owner writes its slot, so concurrent increments on different nodes touch different
/// entries and never conflict; a node whose data directory is wiped gets a new incarnation, hence
/// a new slot, and its old increments stay counted in the old one. So does a node whose last run
/// did not stop cleanly (`Replica.counterSlotOwner`): its disk may have lost increments that
/// members hold, which an increment from the older total would overwrite.
///
/// The arithmetic: a part is a slot's total, an edit is an amount to add to this replica's slot,
/// and a save writes `value - (sum of the totals the key last showed)` to it.
public struct CounterFamily: EntryFamily {
    public typealias Value = Int
    public typealias Part = Int
    public typealias Edit = Int

    public let name: String

    public init(_ name: String) {
        self.name = name
    }

    /// The schema version of a slot payload (a JSON integer).
    public static let slotSchema: UInt16 = 1

    /// The total held by one slot; a tombstone counts as 0.
    public static func total(of entry: Entry) throws(SharingError) -> Int {
        guard let payload = entry.payload else { return 0 }
        let subject = FamilyKey.subject(of: entry.key)
        guard entry.schema <= slotSchema else {
            throw .newerSchema(key: subject, stored: entry.schema, known: slotSchema)
        }
        guard let text = String(validating: payload, as: UTF8.self),
              let total = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw .undecodable(key: subject, reason: "the slot written by node \(entry.version.node.rawValue) does not hold a JSON integer")
        }
        return total
    }

    static func payload(_ total: Int) -> [UInt8] { Array(String(total).utf8) }

    /// The value and slots of counter `name`, from the entries under its prefix. Slots that
    /// cannot be read are left out of the sum and listed in `problems`.
    public static func snapshot(_ name: String, entries: [Entry]) -> CounterSnapshot {
        let prefix = FamilyKey.counterPrefix(name)
        var snapshot = CounterSnapshot(name: name, value: 0, slots: [], problems: [])
        var exact: Int128 = 0
        for entry in entries where entry.key.hasKeyPrefix(prefix) {
            do {
                let total = try total(of: entry)
                snapshot.value &+= total
                exact += Int128(total)
                snapshot.slots.append(.init(
                    incarnation: String(entry.key.dropFirst(prefix.count)), node: entry.version.node.rawValue, total: total))
            } catch {
                snapshot.problems.append(error.description)
            }
        }
        // Each node refuses an increment that would overflow its own slot, but slots written on
        // different nodes can still add up past the limit: say so rather than show a wrapped sum.
        if Int(exactly: exact) == nil {
            snapshot.problems.append("the slots of counter \(name) add up beyond \(Int.max) (the largest integer): the value shown wrapped around and is wrong")
        }
        return snapshot
    }

    // MARK: EntryFamily

    public var keyDescription: String { ".counter(\(String(reflecting: name)))" }
    public var subject: String { "counter \(name)" }
    public var prefix: String { FamilyKey.counterPrefix(name) }

    public func subject(ofEntry key: String) -> String { subject }

    public func part(of entry: Entry) throws(SharingError) -> Int? { try Self.total(of: entry) }

    public func applying(_ edit: Int, to part: Int?) -> Int? { (part ?? 0) &+ edit }

    public func combining(_ earlier: Int, _ later: Int) -> Int { earlier &+ later }

    public func value(of parts: [String: Int]) -> Int { parts.values.reduce(0, &+) }

    public func apply(_ changes: [PartChange<Int>], to value: inout Int) {
        for change in changes { value &+= (change.new ?? 0) &- (change.old ?? 0) }
    }

    public func edits(from shown: [String: Int], to value: Int, on replica: Replica) -> FamilyEdits<CounterFamily> {
        let amount = value &- self.value(of: shown)
        guard amount != 0 else { return FamilyEdits() }
        return FamilyEdits(edits: [FamilyKey.counterSlot(name, incarnation: replica.counterSlotOwner): amount])
    }

    public func write(_ edits: [String: Int], to replica: Replica) async throws -> FamilyWrite {
        // Every edit goes to this replica's own slot, so they are one addition: edits keyed by
        // two slots (a save that failed, then the key moved to another replica) written as two
        // additions could commit one and fail the other, and both stayed pending: the first
        // was counted twice at the next save.
        var amount = 0
        for edit in edits.values {
            let (sum, overflow) = amount.addingReportingOverflow(edit)
            guard !overflow else { throw SharingError.counterOverflow(name: name) }
            amount = sum
        }
        guard amount != 0 else { return FamilyWrite(committed: []) }
        // The replica adds to its own slot's running total (increments queued before one commit
        // add up there), and refuses to overwrite a slot of a newer schema.
        return FamilyWrite(committed: [try await replica.addToCounter(name, delta: amount)])
    }
}

/// A counter's value and where it comes from.
public struct CounterSnapshot: Sendable, Equatable, Codable {
    public struct Slot: Sendable, Equatable, Codable {
        /// The id that owns the slot: the incarnation (data directory) of the node that writes it,
        /// or the id that node took after a run that did not stop cleanly.
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
