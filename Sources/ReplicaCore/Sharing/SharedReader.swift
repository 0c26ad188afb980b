import Observation

/// Read-only shared state: like `Shared` without `withLock` and `save`.
///
/// ```swift
/// @SharedReader(.replicated("settings")) var settings = Settings()
/// let theme = SharedReader($settings.theme)   // or $settings.theme from a Shared
/// ```
@dynamicMemberLookup
@propertyWrapper
public struct SharedReader<Value: Sendable>: Sendable {
    let box: ReferenceBox<any Reference<Value>>

    var reference: any Reference<Value> { box.reference }

    init(reference: any Reference<Value>) {
        box = ReferenceBox(reference)
    }

    /// Reads `key`'s value. `wrappedValue` is evaluated only if storage has no value.
    public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedReaderKey<Value>) {
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: wrappedValue))
    }

    /// Reads a key that can also save: the same state as a `Shared` of that key.
    public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedKey<Value>) {
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: wrappedValue))
    }

    /// Reads an optional value of `key`, nil when storage has none.
    @_disfavoredOverload
    public init<Wrapped>(_ key: some SharedReaderKey<Value>) where Value == Wrapped? {
        self.init(wrappedValue: nil, key)
    }

    @_disfavoredOverload
    public init<Wrapped>(_ key: some SharedKey<Value>) where Value == Wrapped? {
        self.init(wrappedValue: nil, key)
    }

    /// Reads `key`'s value with the default its `Default` declares.
    public init<Key: SharedReaderKey<Value>>(_ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: key.initialValue, key.base)
    }

    public init<Key: SharedKey<Value>>(_ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: key.initialValue, key.base)
    }

    public init<Key: SharedReaderKey<Value>>(wrappedValue: @autoclosure () -> Value, _ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: wrappedValue(), key.base)
    }

    public init<Key: SharedKey<Value>>(wrappedValue: @autoclosure () -> Value, _ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: wrappedValue(), key.base)
    }

    /// A constant, with no storage.
    public init(value: Value) {
        self.init(reference: KeyReference.make(key: UnpersistedKey<Value>(), initialValue: { value }))
    }

    /// A read-only view of `shared`.
    public init(_ shared: Shared<Value>) {
        self.init(reference: shared.reference)
    }

    /// The wrapped value of a shared optional, or nil if it is nil now.
    public init?(_ base: Shared<Value?>) {
        self.init(SharedReader<Value?>(base))
    }

    /// The wrapped value of a read-only shared optional, or nil if it is nil now.
    public init?(_ base: SharedReader<Value?>) {
        guard let initial = base.wrappedValue else { return nil }
        func unwrap(_ reference: some Reference<Value?>) -> any Reference<Value> {
            UnwrappedReference(base: reference, initialValue: initial)
        }
        self.init(reference: unwrap(base.reference))
    }

    public init(projectedValue: SharedReader<Value>) {
        self = projectedValue
    }

    /// Reads `key`'s value, throwing if storage has none (or it cannot be loaded).
    public init(require key: some SharedReaderKey<Value>) async throws {
        let loaded = try await loadRequired(key)
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: { loaded }))
        if let loadError { throw loadError }
    }

    public init(require key: some SharedKey<Value>) async throws {
        let loaded = try await loadRequired(key)
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: { loaded }))
        if let loadError { throw loadError }
    }

    public var wrappedValue: Value { reference.value }

    /// This state; assigning another `SharedReader` points every copy of this one at it.
    public var projectedValue: SharedReader<Value> {
        get { self }
        nonmutating set { box.replace(with: newValue.reference).touch() }
    }

    /// A member of the value as read-only shared state.
    public subscript<Member: Sendable>(dynamicMember keyPath: KeyPath<Value, Member> & Sendable) -> SharedReader<Member> {
        SharedReader<Member>(reference: ReadReference(base: reference, label: "[dynamicMember: \(keyPath)]") { $0[keyPath: keyPath] })
    }

    /// Read-only shared state computed from this one.
    public func read<Member: Sendable>(_ body: @escaping @Sendable (Value) -> Member) -> SharedReader<Member> {
        SharedReader<Member>(reference: ReadReference(base: reference, label: ".read(\(Member.self))", transform: body))
    }

    public func load() async throws { try await reference.load() }

    /// Points this state (every copy of it) at `key`, then loads it. The current value is used
    /// if `key`'s storage has none.
    public func load(_ key: some SharedReaderKey<Value>) async throws {
        try await repoint(to: SharedReferenceRegistry.reference(for: key, initialValue: { wrappedValue }))
    }

    public func load(_ key: some SharedKey<Value>) async throws {
        try await repoint(to: SharedReferenceRegistry.reference(for: key, initialValue: { wrappedValue }))
    }

    private func repoint(to reference: any Reference<Value>) async throws {
        box.replace(with: reference).touch()  // observers of the old state look again
        try await reference.load()
    }

    public var isLoading: Bool { reference.isLoading }
    public var loadError: (any Error)? { reference.loadError }
    /// The current value, then every change (local or remote).
    public var values: AsyncStream<Value> { reference.values() }
}

/// Equal when their values are equal, as in Sharing.
extension SharedReader: Equatable where Value: Equatable {
    public static func == (lhs: SharedReader, rhs: SharedReader) -> Bool {
        lhs.wrappedValue == rhs.wrappedValue
    }
}

extension SharedReader: Identifiable where Value: Identifiable {
    public var id: Value.ID { wrappedValue.id }
}

extension SharedReader: Observable {}

extension SharedReader: CustomStringConvertible {
    public var description: String { "SharedReader<\(Value.self)>(\(reference.description))" }
}

extension SharedReader: CustomReflectable {
    public var customMirror: Mirror { Mirror(reflecting: wrappedValue) }
}
