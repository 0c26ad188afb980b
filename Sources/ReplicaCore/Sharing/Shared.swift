/// A value shared with every other `Shared` of the same key, and persisted (and, for replicated
/// keys, replicated) through that key. Usable as a property wrapper or as a value:
///
/// ```swift
/// @Shared(.replicated("count")) var count = 0
/// $count.withLock { $0 += 1 }        // saves with .didSet
/// try await $count.save()            // returns once durable
/// for await value in $count.values { ... }
/// ```
@propertyWrapper
public struct Shared<Value: Sendable>: Sendable {
    let reference: SharedReference<Value>

    /// Shares `key`'s value; `wrappedValue` is used (and evaluated) only if storage has none.
    public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedKey<Value>) {
        reference = SharedReferenceRegistry.reference(for: key) {
            SharedReference(key: key, initialValue: wrappedValue())
        }
    }

    /// State owned by the caller, with no storage.
    public init(value: Value) {
        reference = .unpersisted(value)
    }

    /// Shares `key`'s value, throwing if storage has none (or it cannot be loaded).
    public init(require key: some SharedKey<Value>) async throws {
        let loaded = try await Self.loadRequired(key)
        reference = SharedReferenceRegistry.reference(for: key) {
            SharedReference(key: key, initialValue: loaded)
        }
    }

    static func loadRequired(_ key: some SharedReaderKey<Value>) async throws -> Value {
        try await withCheckedThrowingContinuation { waiter in
            key.load(context: .userInitiated, continuation: LoadContinuation("load of \(key.id)") { outcome in
                switch outcome {
                case .success(let value?): waiter.resume(returning: value)
                case .success(nil): waiter.resume(throwing: SharingError.noValue(key: "\(key.id)"))
                case .failure(let error): waiter.resume(throwing: error)
                }
            })
        }
    }

    /// The current value. Mutate it with `withLock`, which saves.
    public var wrappedValue: Value { reference.value }

    public var projectedValue: Shared<Value> { self }

    /// Mutates the value with exclusive access, then saves it (`SaveContext.didSet`).
    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try reference.withLock(body)
    }

    /// Reloads the value from storage.
    public func load() async throws { try await reference.load() }

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
    public var reader: SharedReader<Value> { SharedReader(reference: reference) }
}

/// Read-only shared state: like `Shared` without `withLock` and `save`.
@propertyWrapper
public struct SharedReader<Value: Sendable>: Sendable {
    let reference: SharedReference<Value>

    init(reference: SharedReference<Value>) { self.reference = reference }

    public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedReaderKey<Value>) {
        reference = SharedReferenceRegistry.reference(for: key) {
            SharedReference(key: key, initialValue: wrappedValue())
        }
    }

    public init(value: Value) { reference = .unpersisted(value) }

    public init(require key: some SharedReaderKey<Value>) async throws {
        let loaded = try await Shared<Value>.loadRequired(key)
        reference = SharedReferenceRegistry.reference(for: key) {
            SharedReference(key: key, initialValue: loaded)
        }
    }

    public var wrappedValue: Value { reference.value }
    public var projectedValue: SharedReader<Value> { self }
    public func load() async throws { try await reference.load() }
    public var isLoading: Bool { reference.isLoading }
    public var loadError: (any Error)? { reference.loadError }
    public var values: AsyncStream<Value> { reference.values() }
}
