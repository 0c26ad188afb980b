import Foundation

/// The key behind `.log("name", id:, orderedBy:)` and `.drinks()`: an `EntryFamilyKey` over
/// `LogFamily`.
public typealias LogKey<Element: Codable & Sendable & Equatable> = EntryFamilyKey<LogFamily<Element>>

extension SharedReaderKey {
    /// A log that never loses a concurrent addition: `Shared<[Element]>` over one entry per
    /// element (see `LogFamily`). A save writes only the elements added, changed or removed since
    /// the key last saw the array, in one commit. The array is kept sorted by `orderedBy`, ties
    /// broken by id; it starts from what is stored (the initial value given to `@Shared` is not
    /// used). An element that cannot be saved (too large, or its id repeated in the array) fails
    /// alone, named in `saveError`; the rest of the save is written.
    public static func log<Element, ID: Hashable & LosslessStringConvertible & Sendable, Order: Comparable & Sendable>(
        _ name: String, id: KeyPath<Element, ID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable,
        on replica: Replica? = nil
    ) -> Self where Self == LogKey<Element> {
        LogKey(LogFamily(name, id: id, orderedBy: order), on: replica)
    }

    /// A log whose elements have a UUID id.
    public static func log<Element, Order: Comparable & Sendable>(
        _ name: String, id: KeyPath<Element, UUID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable,
        on replica: Replica? = nil
    ) -> Self where Self == LogKey<Element> {
        LogKey(LogFamily(name, id: id, orderedBy: order), on: replica)
    }
}
