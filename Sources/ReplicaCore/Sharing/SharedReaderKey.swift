/// A way to load and observe a shared value from an external system, in the shape of
/// Point-Free Sharing 2.0's `SharedReaderKey`.
///
/// Two keys with equal `id`s (and the same `Value` type) are the same shared state: every
/// `Shared`/`SharedReader` made from them holds one reference.
public protocol SharedReaderKey<Value>: Sendable {
    associatedtype Value: Sendable
    associatedtype ID: Hashable & Sendable

    var id: ID { get }

    /// Loads the stored value and resumes `continuation` exactly once: with a value, with
    /// `resumeReturningInitialValue()` when storage has none, or with an error.
    func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>)

    /// Starts delivering external changes to `subscriber` until the subscription is cancelled.
    func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription
}

/// A key that can also save, like Sharing 2.0's `SharedKey`.
public protocol SharedKey<Value>: SharedReaderKey {
    /// Saves `value` and resumes `continuation` exactly once, after the value is durable.
    func save(_ value: Value, context: SaveContext, continuation: SaveContinuation)
}

/// Why a key is being loaded.
public enum LoadContext<Value: Sendable>: Sendable {
    /// Implicitly, when a `Shared` is created; the value to use if storage has none.
    case initialValue(Value)
    /// Explicitly, by `try await $shared.load()`.
    case userInitiated

    public var initialValue: Value? {
        if case .initialValue(let value) = self { value } else { nil }
    }
}

/// Why a key is being saved.
public enum SaveContext: Hashable, Sendable {
    /// Because the value changed (`withLock`).
    case didSet
    /// Explicitly, by `try await $shared.save()`.
    case userInitiated
}
