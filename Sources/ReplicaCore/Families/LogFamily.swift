import Foundation

/// A log as stored: one last-writer-wins entry per element id (key `FamilyKey.logElement`)
/// holding the element's JSON; a removal writes a tombstone. Concurrent adds on both sides of a
/// partition touch different entries and all survive; a removal wins over the versions of the
/// element it had seen (and loses to a later edit, as LWW does).
///
/// Used by `LogKey` and by `replica-node drinks`, so the library and the CLI agree.
public struct LogFamily<Element: Codable & Sendable & Equatable>: Sendable {
    public let name: String
    let idString: @Sendable (Element) -> String
    let precedes: @Sendable (Element, Element) -> Bool
    let codec = ReplicatedValueCodec<Element>()

    /// A log whose elements are identified by `id` and ordered by `orderedBy`, ties broken by id.
    public init<ID: Hashable & LosslessStringConvertible, Order: Comparable>(
        _ name: String, id: KeyPath<Element, ID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable
    ) {
        self.name = name
        idString = { $0[keyPath: id].description }
        precedes = { $0[keyPath: order] < $1[keyPath: order] }
    }

    /// A log whose elements are identified by a UUID (stored lowercase in keys).
    public init<Order: Comparable>(
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
    public func element(in entry: Entry) throws -> Element? {
        guard let payload = entry.payload else { return nil }
        return try codec.decode(payload, schema: entry.schema, key: entry.key)
    }

    /// The elements of the log (sorted) and the entries that could not be read.
    public func elements(in entries: [Entry]) -> (elements: [Element], problems: [(entry: Entry, error: SharingError)]) {
        var elements: [Element] = []
        var problems: [(entry: Entry, error: SharingError)] = []
        for entry in entries where entry.key.hasPrefix(prefix) {
            do {
                if let element = try element(in: entry) { elements.append(element) }
            } catch {
                problems.append((entry, error as? SharingError ?? .undecodable(key: entry.key, reason: "\(error)")))
            }
        }
        return (sorted(elements), problems)
    }

    /// The write that adds or replaces `element`.
    public func put(_ element: Element) throws -> Replica.WriteRequest {
        Replica.WriteRequest(key: key(forID: idString(element)), payload: try codec.encode(element), schema: schema)
    }

    /// The write that removes the element `id` (a tombstone).
    public func removal(ofID id: String) -> Replica.WriteRequest {
        Replica.WriteRequest(key: key(forID: id), payload: nil, schema: schema)
    }
}
