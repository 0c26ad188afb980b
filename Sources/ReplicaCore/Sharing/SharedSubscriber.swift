import Synchronization

/// Receives external changes for a subscribed key (remote updates, writes by other clients).
/// Values yielded here update `Shared` state without being saved again: nothing echoes back.
public struct SharedSubscriber<Value: Sendable>: Sendable {
    enum Event: Sendable {
        case value(Value)
        case initialValue
        case failure(any Error)
        case loading(Bool)
        /// The key's load error is resolved; the value is unchanged.
        case errorCleared
        /// The key can save now (it was waiting for a replica): save local changes not yet saved.
        case saveIfChanged
    }

    let callback: @Sendable (Event) -> Void
    /// Runs a body on the live value under the reference's lock and tells observers. Keys that
    /// keep bookkeeping about the value (counters, logs) change it and their books in one step.
    let modifyValue: @Sendable ((inout Value) -> Void) -> Void
    /// Runs a body on the live value under the reference's lock, telling nobody (a save reads
    /// the value it diffs under the same lock that remote changes are applied under).
    let readValue: @Sendable ((Value) -> Void) -> Void

    public func yield(_ value: Value) { callback(.value(value)) }
    /// Storage no longer has a value (it was removed): fall back to the initial value, or keep
    /// the current one if the initial value was never needed (and so never evaluated).
    public func yieldReturningInitialValue() { callback(.initialValue) }
    public func yield(throwing error: any Error) { callback(.failure(error)) }
    public func yieldLoading(_ isLoading: Bool = true) { callback(.loading(isLoading)) }
    public func yield(with result: Result<Value?, any Error>) {
        switch result {
        case .success(let value?): yield(value)
        case .success(nil): yieldReturningInitialValue()
        case .failure(let error): yield(throwing: error)
        }
    }

    func yieldErrorCleared() { callback(.errorCleared) }
    func requestSaveIfChanged() { callback(.saveIfChanged) }
    func modify(_ body: (inout Value) -> Void) { modifyValue(body) }
    func read(_ body: (Value) -> Void) { readValue(body) }
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
