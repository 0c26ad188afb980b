/// A way to load and observe a shared value from an external system, in the shape of
/// Point-Free Sharing 2.0's `SharedReaderKey`.
///
/// Two keys of the same type with equal `id`s are the same shared state: every
/// `Shared`/`SharedReader` made from them holds one reference while any of them is alive.
public protocol SharedReaderKey<Value>: Sendable {
    associatedtype Value: Sendable
    associatedtype ID: Hashable & Sendable = Self

    var id: ID { get }

    /// Loads the stored value and resumes `continuation` exactly once: with a value, with
    /// `resumeReturningInitialValue()` when storage has none, or with an error.
    func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>)

    /// Starts delivering external changes to `subscriber` until the subscription is cancelled.
    func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription
}

extension SharedReaderKey where ID == Self {
    public var id: Self { self }
}

/// A key that can also save, like Sharing 2.0's `SharedKey`.
public protocol SharedKey<Value>: SharedReaderKey {
    /// Saves `value` and resumes `continuation` exactly once, after the value is durable.
    func save(_ value: Value, context: SaveContext, continuation: SaveContinuation)
}

/// Why a key is being loaded.
public enum LoadContext<Value: Sendable>: Sendable {
    /// Implicitly, when a `Shared` is created and storage had no value; the value to use.
    case initialValue(Value)
    /// Explicitly, by `try await $shared.load()`, `Shared(require:)`, or when a `Shared` is
    /// created and its initial value has not been evaluated (it is evaluated only if needed).
    case userInitiated

    public var initialValue: Value? {
        if case .initialValue(let value) = self { value } else { nil }
    }
}

extension LoadContext: Equatable where Value: Equatable {}
extension LoadContext: Hashable where Value: Hashable {}

/// Why a key is being saved.
public enum SaveContext: Hashable, Sendable {
    /// Because the value changed (`withLock`).
    case didSet
    /// Explicitly, by `try await $shared.save()`.
    case userInitiated
}
