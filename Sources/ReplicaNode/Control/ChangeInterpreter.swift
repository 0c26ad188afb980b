import Foundation
import ReplicaCore

/// Turns the entries a replica applies into changes in the user's terms, for `watch`.
///
/// An applied entry says only "this key now holds these bytes". A counter's change is the
/// difference between its slot's new and previous totals, and a log element is added or
/// changed depending on whether it existed; so the interpreter keeps the slot totals and the
/// log elements it has seen, seeded from the store when the watch starts.
struct ChangeInterpreter {
    static let drinkLog = Drink.log()

    /// Keys, counter names and log names must start with this.
    let prefix: String
    private var slotTotals: [String: Int] = [:]
    private var counterTotals: [String: Int] = [:]
    /// The last payload of each log element, with its schema.
    private var logElements: [String: (schema: UInt16, payload: Data)] = [:]

    /// `families`: the current counter slots and log elements (entries whose keys start with
    /// `FamilyKey.marker`), so the first change of each is shown against what was there.
    init(prefix: String, families: [Entry]) {
        self.prefix = prefix
        for entry in families {
            switch FamilyKey.member(of: entry.key) {
            case .counterSlot(let counter, _) where counter.hasPrefix(prefix):
                let total = (try? CounterFamily.total(of: entry)) ?? 0
                slotTotals[entry.key] = total
                counterTotals[counter, default: 0] &+= total
            case .logElement(let log, _) where log.hasPrefix(prefix):
                if let payload = entry.payload { logElements[entry.key] = (entry.schema, Data(payload)) }
            default:
                continue
            }
        }
    }

    /// The change `change` makes, or nil if it is not watched (outside the prefix).
    mutating func interpret(_ change: Change) -> WatchedChange? {
        let entry = change.entry
        let subject: WatchedChange.Subject
        switch FamilyKey.member(of: entry.key) {
        case .counterSlot(let counter, _):
            guard counter.hasPrefix(prefix) else { return nil }
            guard let total = try? CounterFamily.total(of: entry) else {
                // A slot this version cannot read (newer schema): show its bytes.
                subject = .register(key: FamilyKey.readable(entry.key), value: entry.payload.map { Data($0) })
                break
            }
            let delta = total &- (slotTotals[entry.key] ?? 0)
            slotTotals[entry.key] = total
            counterTotals[counter, default: 0] &+= delta
            subject = .counter(name: counter, delta: delta, total: counterTotals[counter] ?? total)
        case .logElement(let log, let id):
            guard log.hasPrefix(prefix) else { return nil }
            let previous = logElements[entry.key]
            let action: WatchedChange.LogAction
            let element: (schema: UInt16, payload: Data)?
            if let payload = entry.payload {
                action = previous == nil ? .added : .changed
                element = (entry.schema, Data(payload))
                logElements[entry.key] = element
            } else {
                action = .removed
                element = previous
                logElements[entry.key] = nil
            }
            let drink = element.flatMap { Self.drink(log: log, entry: entry, element: $0) }
            subject = .log(name: log, id: id, action: action, element: element?.payload, drink: drink)
        case nil:
            let key = FamilyKey.readable(entry.key)
            guard key.hasPrefix(prefix) else { return nil }
            subject = .register(key: key, value: entry.payload.map { Data($0) })
        }
        let deliveredBy: String? = switch change.origin {
        case .local: nil
        case .remote(let node): node.rawValue
        }
        return WatchedChange(subject: subject, version: entry.version, deliveredBy: deliveredBy)
    }

    /// The drink an element of the drink log holds (migrated from older schemas), if it is one.
    private static func drink(log: String, entry: Entry, element: (schema: UInt16, payload: Data)) -> Drink? {
        guard log == drinkLog.name else { return nil }
        let stored = Entry(key: entry.key, version: entry.version, schema: element.schema, payload: [UInt8](element.payload))
        return try? drinkLog.element(in: stored)
    }
}
