import Synchronization

/// Makes every `Shared` of one key id share one `SharedReference` while any of them is alive.
enum SharedReferenceRegistry {
    // Unchecked because AnyHashable is not Sendable; every key ID is (SharedReaderKey.ID: Sendable).
    private struct Slot: Hashable, @unchecked Sendable {
        var id: AnyHashable
        var valueType: ObjectIdentifier
    }

    private final class WeakBox: @unchecked Sendable {
        weak var reference: AnyObject?
        init(_ reference: AnyObject) { self.reference = reference }
    }

    private static let references = Mutex<[Slot: WeakBox]>([:])

    /// The live reference for `key`, or a new one made (and started) by `make`.
    static func reference<Value: Sendable>(
        for key: any SharedReaderKey<Value>, make: () -> SharedReference<Value>
    ) -> SharedReference<Value> {
        let slot = Slot(id: AnyHashable(key.id), valueType: ObjectIdentifier(Value.self))
        if let existing = references.withLock({ $0[slot]?.reference as? SharedReference<Value> }) { return existing }
        let candidate = make()
        var created: SharedReference<Value>?
        let reference = references.withLock { references -> SharedReference<Value> in
            // Another thread may have registered one meanwhile: theirs wins.
            if let existing = references[slot]?.reference as? SharedReference<Value> { return existing }
            references[slot] = WeakBox(candidate)
            if references.count % 64 == 0 { references = references.filter { $0.value.reference != nil } }
            created = candidate
            return candidate
        }
        created?.start()
        return reference
    }
}
