import Observation

/// A value shared with every other `Shared` of the same key, and persisted (and, for replicated
/// keys, replicated) through that key. Usable as a property wrapper or as a value:
///
/// ```swift
/// @Shared(.replicated("count")) var count = 0
/// $count.withLock { $0 += 1 }        // saves with .didSet
/// try await $count.save()            // returns once durable
/// for await value in $count.values { ... }
/// ```
///
/// Reading the value takes part in Swift's Observation, so an `@Observable` model holding an
/// `@ObservationIgnored @Shared` property, or a SwiftUI view, updates on local and remote changes.
@dynamicMemberLookup
@propertyWrapper
public struct Shared<Value: Sendable>: Sendable {
    let box: ReferenceBox<any MutableReference<Value>>

    var reference: any MutableReference<Value> { box.reference }

    init(reference: any MutableReference<Value>) {
        box = ReferenceBox(reference)
    }

    /// Shares `key`'s value. `wrappedValue` is evaluated only if storage has no value.
    public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedKey<Value>) {
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: wrappedValue))
    }

    /// Shares an optional value of `key`, nil when storage has none.
    @_disfavoredOverload
    public init<Wrapped>(_ key: some SharedKey<Value>) where Value == Wrapped? {
        self.init(wrappedValue: nil, key)
    }

    /// Shares `key`'s value with the default its `Default` declares.
    public init<Key: SharedKey<Value>>(_ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: key.initialValue, key.base)
    }

    /// Shares `key`'s value, with `wrappedValue` in place of the default its `Default` declares.
    public init<Key: SharedKey<Value>>(wrappedValue: @autoclosure () -> Value, _ key: SharedKeyDefault<Key>) {
        self.init(wrappedValue: wrappedValue(), key.base)
    }

    /// State owned by the caller, with no storage.
    public init(value: Value) {
        self.init(reference: KeyReference.make(key: UnpersistedKey<Value>(), initialValue: { value }))
    }

    /// The wrapped value of a shared optional, or nil if it is nil now. When the optional later
    /// becomes nil, the unwrapped `Shared` keeps its last value.
    public init?(_ base: Shared<Value?>) {
        guard let initial = base.wrappedValue else { return nil }
        func unwrap(_ reference: some MutableReference<Value?>) -> any MutableReference<Value> {
            UnwrappedReference(base: reference, initialValue: initial)
        }
        self.init(reference: unwrap(base.reference))
    }

    /// The same shared state (what Swift calls for `@Shared` closure parameters).
    public init(projectedValue: Shared<Value>) {
        self = projectedValue
    }

    /// Shares `key`'s value, throwing if storage has none (or it cannot be loaded).
    public init(require key: some SharedKey<Value>) async throws {
        let loaded = try await loadRequired(key)
        self.init(reference: SharedReferenceRegistry.reference(for: key, initialValue: { loaded }))
        if let loadError { throw loadError }
    }

    /// The current value. Mutate it with `withLock`, which saves.
    public var wrappedValue: Value { reference.value }

    /// This shared state; assigning another `Shared` points every copy of this one at it.
    public var projectedValue: Shared<Value> {
        get { self }
        nonmutating set { box.replace(with: newValue.reference).touch() }
    }

    /// Mutates the value with exclusive access, then saves it (`SaveContext.didSet`). The body
    /// may read the value (the lock is recursive); keep it short: other changes wait for it.
    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try reference.withLock(body)
    }

    /// A member of the value as shared state of its own: writing it writes the root value.
    public subscript<Member: Sendable>(dynamicMember keyPath: WritableKeyPath<Value, Member> & Sendable) -> Shared<Member> {
        Shared<Member>(reference: MemberReference(base: reference, keyPath: keyPath))
    }

    /// A read-only member of the value as read-only shared state.
    public subscript<Member: Sendable>(dynamicMember keyPath: KeyPath<Value, Member> & Sendable) -> SharedReader<Member> {
        SharedReader(self)[dynamicMember: keyPath]
    }

    /// Read-only shared state computed from this one.
    public func read<Member: Sendable>(_ body: @escaping @Sendable (Value) -> Member) -> SharedReader<Member> {
        SharedReader(self).read(body)
    }

    /// Reloads the value from storage.
    public func load() async throws { try await reference.load() }

    /// Points this shared state (every copy of it) at `key`, then loads it. The current value
    /// is used if `key`'s storage has none.
    public func load(_ key: some SharedKey<Value>) async throws {
        let reference = SharedReferenceRegistry.reference(for: key, initialValue: { wrappedValue })
        box.replace(with: reference).touch()  // observers of the old state look again
        try await reference.load()
    }

    /// Saves the current value and returns once it is durable.
    public func save() async throws { try await reference.save() }

    /// Whether a load is in progress.
    public var isLoading: Bool { reference.isLoading }
    /// Why the value could not be loaded, until the next successful load or received change.
    public var loadError: (any Error)? { reference.loadError }
    /// Why the value could not be saved, until the next successful save.
    public var saveError: (any Error)? { reference.saveError }

    /// The current value, then every change (local or remote): observation without Combine.
    public var values: AsyncStream<Value> { reference.values() }

    /// A read-only view of the same state.
    public var reader: SharedReader<Value> { SharedReader(self) }
}

/// Loads `key` for `Shared(require:)` and `SharedReader(require:)`.
func loadRequired<Key: SharedReaderKey>(_ key: Key) async throws -> Key.Value {
    try await withCheckedThrowingContinuation { waiter in
        key.load(context: .userInitiated, continuation: LoadContinuation("load of \(key.readable)") { outcome in
            switch outcome {
            case .success(let value?): waiter.resume(returning: value)
            case .success(nil): waiter.resume(throwing: SharingError.noValue(key: key.readable))
            case .failure(let error): waiter.resume(throwing: error)
            }
        })
    }
}

/// Equal when their values are equal, as in Sharing (not when they are the same state).
extension Shared: Equatable where Value: Equatable {
    public static func == (lhs: Shared, rhs: Shared) -> Bool {
        lhs.wrappedValue == rhs.wrappedValue
    }
}

extension Shared: Identifiable where Value: Identifiable {
    public var id: Value.ID { wrappedValue.id }
}

extension Shared: Observable {}

extension Shared: CustomStringConvertible {
    public var description: String { "Shared<\(Value.self)>(\(reference.description))" }
}

extension Shared: CustomReflectable {
    public var customMirror: Mirror { Mirror(reflecting: wrappedValue) }
}

/// The key of `Shared(value:)`: nothing to load, save or observe. Each one is distinct.
struct UnpersistedKey<Value: Sendable>: SharedKey, CustomStringConvertible {
    private final class Identity: Sendable {}
    private let identity = Identity()

    var id: ObjectIdentifier { ObjectIdentifier(identity) }
    var description: String { "value" }

    func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) { continuation.resumeReturningInitialValue() }
    func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription { SharedSubscription {} }
    func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) { continuation.resume() }
}
