import Synchronization

/// Receives external changes for a subscribed key (remote updates, writes by other clients).
/// Values yielded here update `Shared` state without being saved again: nothing echoes back.
public struct SharedSubscriber<Value: Sendable>: Sendable {
    enum Event: Sendable {
        case value(Value)
        case initialValue
        case failure(any Error)
        case loading(Bool)
        /// Changes the current value in place, under the reference's lock (counters and logs:
        /// a remote change is applied on top of local changes not saved yet).
        case modify(@Sendable (inout Value) -> Void)
        case errorCleared
    }

    let callback: @Sendable (Event) -> Void

    public func yield(_ value: Value) { callback(.value(value)) }
    /// Storage no longer has a value (it was removed): fall back to the initial value.
    public func yieldReturningInitialValue() { callback(.initialValue) }
    public func yield(throwing error: any Error) { callback(.failure(error)) }
    public func yieldLoading(_ isLoading: Bool = true) { callback(.loading(isLoading)) }
    /// Applies `body` to the current value atomically with respect to local mutations and to the
    /// snapshot a save takes, so a key that saves deltas can keep its bookkeeping exact.
    func yield(modifying body: @escaping @Sendable (inout Value) -> Void) { callback(.modify(body)) }
    /// The key's load error is resolved; the value is unchanged.
    func yieldErrorCleared() { callback(.errorCleared) }
    public func yield(with result: Result<Value?, any Error>) {
        switch result {
        case .success(let value?): yield(value)
        case .success(nil): yieldReturningInitialValue()
        case .failure(let error): yield(throwing: error)
        }
    }
}

/// A subscription to a key's changes; cancelled explicitly or when released.
public final class SharedSubscription: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    public init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    public func cancel() {
        onCancel.withLock { action in defer { action = nil }; return action }?()
    }

    deinit { cancel() }
}
