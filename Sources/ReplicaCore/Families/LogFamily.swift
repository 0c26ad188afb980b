import Foundation

/// A log as stored: one last-writer-wins entry per element id (key `FamilyKey.logElement`)
/// holding the element's JSON; a removal writes a tombstone. Concurrent adds on both sides of a
/// partition touch different entries and all survive; a removal wins over the versions of the
/// element it had seen (and loses to a later edit, as LWW does).
///
/// Used by `.log` keys and by `replica-node drinks`, so the library and the CLI agree.
///
/// The arithmetic: a part is an element, an edit puts or removes one, and a save writes the
/// elements added, changed or removed since the key last showed the array. An id that appears
/// more than once in the array is refused (see docs/sharing.md, "Logs").
public struct LogFamily<Element: Codable & Sendable & Equatable>: EntryFamily {
    public typealias Value = [Element]
    public typealias Part = Element

    /// A local change of one element.
    public enum Edit: Sendable {
        case put(Element)
        case remove
    }

    public let name: String
    let idString: @Sendable (Element) -> String
    let precedes: @Sendable (Element, Element) -> Bool
    let codec = ReplicatedValueCodec<Element>()

    /// A log whose elements are identified by `id` and ordered by `orderedBy`, ties broken by id.
    public init<ID: Hashable & LosslessStringConvertible & Sendable, Order: Comparable & Sendable>(
        _ name: String, id: KeyPath<Element, ID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable
    ) {
        self.name = name
        idString = { $0[keyPath: id].description }
        precedes = { $0[keyPath: order] < $1[keyPath: order] }
    }

    /// A log whose elements are identified by a UUID (stored lowercase in keys).
    public init<Order: Comparable & Sendable>(
        _ name: String, id: KeyPath<Element, UUID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable
    ) {
        self.name = name
        idString = { $0[keyPath: id].uuidString.lowercased() }
        precedes = { $0[keyPath: order] < $1[keyPath: order] }
    }

    public var prefix: String { FamilyKey.logPrefix(name) }
    /// The schema version recorded with every element (`Element.schemaVersion` or 0).
    public var schema: UInt16 { codec.schema }

    public func id(of element: Element) -> String { idString(element) }
    public func key(forID id: String) -> String { FamilyKey.logElement(name, id: id) }
    func id(fromKey key: String) -> String { String(key.dropFirst(prefix.count)) }

    /// Sort order: `orderedBy`, then id (stable whatever the arrival order).
    public func sorted(_ elements: [Element]) -> [Element] {
        elements.sorted(by: inOrder)
    }

    func inOrder(_ a: Element, _ b: Element) -> Bool {
        if precedes(a, b) { return true }
        if precedes(b, a) { return false }
        return idString(a) < idString(b)
    }

    /// The element an entry holds (nil for a removal), migrated if stored by an older schema.
    /// An element whose id is not its key's (written by another program under this log's name,
    /// or by `Replica.write` directly) cannot be read: shown, its next save would move it to
    /// the key of its id.
    public func element(in entry: Entry) throws(SharingError) -> Element? {
        guard let payload = entry.payload else { return nil }
        let subject = subject(ofEntry: entry.key)
        let element = try codec.decode(payload, schema: entry.schema, key: subject)
        let id = id(fromKey: entry.key)
        guard idString(element) == id else {
            throw .undecodable(key: subject, reason: "the element's id is \(idString(element)), not \(id) as its key says")
        }
        return element
    }

    /// The elements of the log (sorted) and the entries that could not be read.
    public func elements(in entries: [Entry]) -> (elements: [Element], problems: [(entry: Entry, error: SharingError)]) {
        var elements: [Element] = []
        var problems: [(entry: Entry, error: SharingError)] = []
        for entry in entries where entry.key.hasKeyPrefix(prefix) {
            do {
                if let element = try element(in: entry) { elements.append(element) }
            } catch {
                problems.append((entry, error))
            }
        }
        return (sorted(elements), problems)
    }

    /// The write that adds or replaces `element`.
    public func put(_ element: Element) throws -> Replica.WriteRequest {
        let key = key(forID: idString(element))
        return Replica.WriteRequest(key: key, payload: try codec.encode(element, key: subject(ofEntry: key)), schema: schema)
    }

    /// The write that removes the element `id` (a tombstone).
    public func removal(ofID id: String) -> Replica.WriteRequest {
        Replica.WriteRequest(key: key(forID: id), payload: nil, schema: schema)
    }

    // MARK: EntryFamily

    public var keyDescription: String { ".log(\(String(reflecting: name)))" }
    public var subject: String { "log \(name)" }

    public func subject(ofEntry key: String) -> String { "element \(id(fromKey: key)) of log \(name)" }

    public func part(of entry: Entry) throws(SharingError) -> Element? { try element(in: entry) }

    public func applying(_ edit: Edit, to part: Element?) -> Element? {
        switch edit {
        case .put(let element): element
        case .remove: nil
        }
    }

    public func combining(_ earlier: Edit, _ later: Edit) -> Edit { later }

    public func value(of parts: [String: Element]) -> [Element] { sorted(Array(parts.values)) }

    public func isArranged(_ value: [Element]) -> Bool {
        zip(value, value.dropFirst()).allSatisfy { !inOrder($1, $0) }
    }

    public func arrange(_ value: inout [Element]) { value.sort(by: inOrder) }

    public func apply(_ changes: [PartChange<Element>], to value: inout [Element]) {
        guard !changes.isEmpty else { return }
        var positions: [String: Int] = [:]
        for (index, element) in value.enumerated() where positions[idString(element)] == nil {
            positions[idString(element)] = index
        }
        // One change per element: two pending for one id (an element taken in by a load, then
        // its removal by the subscription, before either was shown) are one change, from the
        // first's old element to the last's new one. Applied one by one, the second found no
        // element where the first had not added it yet and was skipped: the removed element
        // was shown, and its next save brought it back on every node.
        var combined: [String: PartChange<Element>] = [:]
        var order: [String] = []
        for change in changes {
            if combined[change.key] == nil {
                combined[change.key] = change
                order.append(change.key)
            } else {
                combined[change.key]?.new = change.new
            }
        }
        var removed = Set<Int>()
        var added: [Element] = []
        for change in order.compactMap({ combined[$0] }) {
            let position = positions[id(fromKey: change.key)]
            // Not what the key last showed: changed locally and not saved yet, so it stays.
            guard position.map({ value[$0] }) == change.old else { continue }
            switch (position, change.new) {
            case (let index?, let element?): value[index] = element
            case (nil, let element?): added.append(element)
            case (let index?, nil): removed.insert(index)
            case (nil, nil): break
            }
        }
        if !removed.isEmpty { value = value.enumerated().filter { !removed.contains($0.offset) }.map(\.element) }
        value += added
        value.sort(by: inOrder)
    }

    public func edits(from shown: [String: Element], to value: [Element], on replica: Replica) -> FamilyEdits<LogFamily> {
        var byKey: [String: Element] = [:]
        var repeats: [String: Int] = [:]
        for element in value {
            let key = key(forID: idString(element))
            if byKey[key] == nil { byKey[key] = element } else { repeats[key, default: 1] += 1 }
        }
        var planned = FamilyEdits<LogFamily>()
        for (key, element) in byKey where shown[key] != element && repeats[key] == nil {
            planned.edits[key] = .put(element)
        }
        for key in shown.keys where byKey[key] == nil {
            planned.edits[key] = .remove
        }
        for (key, count) in repeats {
            planned.refused[key] = (shows: byKey[key], error: .elementNotSaved(
                log: name, id: id(fromKey: key),
                reason: "its id appears \(count) times in the array; keep one element per id"))
        }
        return planned
    }

    public func write(_ edits: [String: Edit], to replica: Replica) async throws -> FamilyWrite {
        let limits = replica.configuration.limits
        var requests: [Replica.WriteRequest] = []
        var refused: [String: SharingError] = [:]
        for (key, edit) in edits.sorted(by: { $0.key < $1.key }) {
            let id = id(fromKey: key)
            func refuse(_ reason: String) { refused[key] = .elementNotSaved(log: name, id: id, reason: reason) }
            // Never overwrite (or remove) an element stored by a newer schema.
            if let stored = try replica.reader.entry(for: key), !stored.isTombstone, stored.schema > schema {
                refuse("a newer program stored it (schema \(stored.schema); this one knows \(schema)), and it is kept as it is")
                continue
            }
            do {
                try limits.validate(key: key)
            } catch {
                refuse("its id makes a key of \(key.utf8.count) bytes, over the limit of \(limits.maxKeyBytes)")
                continue
            }
            switch edit {
            case .remove:
                requests.append(removal(ofID: id))
            case .put(let element):
                let payload: [UInt8]
                do {
                    payload = try codec.encode(element, key: subject(ofEntry: key))
                } catch {
                    refuse("it cannot be encoded (\(error))")
                    continue
                }
                guard payload.count <= limits.maxPayloadBytes else {
                    refuse("its JSON is \(payload.count) bytes, over the limit of \(limits.maxPayloadBytes) bytes")
                    continue
                }
                requests.append(Replica.WriteRequest(key: key, payload: payload, schema: schema))
            }
        }
        let committed = requests.isEmpty ? [] : try await replica.write(requests, refusingNewerSchemaThan: schema)
        return FamilyWrite(committed: committed, refused: refused)
    }
}
