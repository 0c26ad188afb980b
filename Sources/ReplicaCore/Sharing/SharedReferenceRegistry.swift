import Synchronization

/// Makes every `Shared`/`SharedReader` of one key share one `KeyReference` while any of them
/// is alive. A slot is the key's type and id, and whether the reference can save: a key used
/// through `SharedReader` in a generic context that hides its `SharedKey` conformance gets a
/// read-only reference of its own rather than handing one that cannot save to a later `Shared`.
enum SharedReferenceRegistry {
    // Unchecked because AnyHashable is not Sendable; every key ID is (SharedReaderKey.ID: Sendable).
    private struct Slot: Hashable, @unchecked Sendable {
        var keyType: ObjectIdentifier
        var id: AnyHashable
        var canSave: Bool
    }

    private final class WeakBox: @unchecked Sendable {
        weak var reference: AnyObject?
        init(_ reference: AnyObject) { self.reference = reference }
    }

    private static let references = Mutex<[Slot: WeakBox]>([:])

    /// The live reference for `key`, or the one `make` creates.
    static func reference<Key: SharedReaderKey>(
        for key: Key, canSave: Bool, make: () -> KeyReference<Key>
    ) -> KeyReference<Key> {
        let slot = Slot(keyType: ObjectIdentifier(Key.self), id: AnyHashable(key.id), canSave: canSave)
        if let existing = references.withLock({ $0[slot]?.reference as? KeyReference<Key> }) { return existing }
        let candidate = make()
        return references.withLock { references in
            // Another thread may have registered one meanwhile: theirs wins.
            if let existing = references[slot]?.reference as? KeyReference<Key> { return existing }
            references[slot] = WeakBox(candidate)
            if references.count % 64 == 0 { references = references.filter { $0.value.reference != nil } }
            return candidate
        }
    }

    static func reference<Key: SharedReaderKey>(for key: Key, initialValue: () -> Key.Value) -> KeyReference<Key> {
        reference(for: key, canSave: false) { KeyReference.make(key: key, initialValue: initialValue) }
    }

    static func reference<Key: SharedKey>(for key: Key, initialValue: () -> Key.Value) -> KeyReference<Key> {
        reference(for: key, canSave: true) { KeyReference.make(key: key, initialValue: initialValue) }
    }
}

/// The reference a `Shared` or `SharedReader` reads through; replaced by `load(_:)` and by
/// assigning the projected value, for every copy of that `Shared` at once (as in Sharing).
final class ReferenceBox<Held: Sendable>: Sendable {
    private let held: Mutex<Held>

    init(_ held: Held) { self.held = Mutex(held) }

    var reference: Held { held.withLock { $0 } }

    /// Holds `new` from now on and returns what was held.
    func replace(with new: Held) -> Held {
        held.withLock { held in
            defer { held = new }
            return held
        }
    }
}
