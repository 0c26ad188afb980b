import Foundation
import Synchronization

/// The one piece of state behind every `Shared`/`SharedReader` of a key: the value, its load
/// and save status, observers, and the key's subscription.
///
/// Saves are serialised: at most one is in flight, and changes made meanwhile are saved together
/// once it finishes (only the newest value matters, and keys that save deltas compute them from
/// the value). So saves reach storage in the order the value changed.
final class SharedReference<Value: Sendable>: Sendable {
    private struct State {
        var value: Value
        var initialValue: Value
        var isLoading = false
        var loadError: (any Error)?
        var saveError: (any Error)?
        var observers: [UUID: AsyncStream<Value>.Continuation] = [:]
        var subscription: SharedSubscription?
        var isSaving = false
        var saveAgain = false
        /// Waiting for the save in flight (or for the next one when `saveAgain`).
        var currentWaiters: [CheckedContinuation<Void, any Error>] = []
        var nextWaiters: [CheckedContinuation<Void, any Error>] = []
        /// Bumped by every local change, so a slow load does not overwrite a newer local value.
        var changeCount = 0
    }

    let key: any SharedReaderKey<Value>
    private let saver: (any SharedKey<Value>)?
    /// For keys that save deltas: told, under the lock, which value the next save will carry.
    private let prepareSave: (@Sendable (Value) -> Void)?
    private let description: String
    private let state: Mutex<State>

    /// A reference to `key`'s value; it saves through the key if the key can save.
    init(key: any SharedReaderKey<Value>, initialValue: Value) {
        self.key = key
        self.saver = key as? any SharedKey<Value>
        if let delta = key as? any DeltaSavingKey<Value> {
            self.prepareSave = { delta.prepareSave($0) }
        } else {
            self.prepareSave = nil
        }
        self.description = "\(key.id)"
        state = Mutex(State(value: initialValue, initialValue: initialValue))
    }

    /// A reference with no storage (`Shared(value:)`).
    static func unpersisted(_ value: Value) -> SharedReference {
        SharedReference(key: UnpersistedKey<Value>(), initialValue: value)
    }

    deinit {
        let (subscription, observers) = state.withLock { ($0.subscription, $0.observers) }
        subscription?.cancel()
        for observer in observers.values { observer.finish() }
    }

    // MARK: Reading

    var value: Value { state.withLock { $0.value } }
    var isLoading: Bool { state.withLock { $0.isLoading } }
    var loadError: (any Error)? { state.withLock { $0.loadError } }
    var saveError: (any Error)? { state.withLock { $0.saveError } }

    /// The current value, then every change, until the stream is dropped.
    func values() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        state.withLock { state in
            continuation.yield(state.value)
            state.observers[id] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: Loading and subscribing

    /// The implicit first load and the subscription, when the reference is created.
    func start() {
        let initial = state.withLock { state in
            state.isLoading = true
            return state.initialValue
        }
        let changeCount = state.withLock { $0.changeCount }
        key.load(context: .initialValue(initial), continuation: LoadContinuation("load of \(description)") { [weak self] outcome in
            self?.finishLoad(outcome, ifUnchangedSince: changeCount)
        })
        let subscription = key.subscribe(context: .initialValue(initial), subscriber: SharedSubscriber { [weak self] event in
            self?.receive(event)
        })
        state.withLock { $0.subscription = subscription }
    }

    /// `try await $shared.load()`.
    func load() async throws {
        state.withLock { $0.isLoading = true }
        let changeCount = state.withLock { $0.changeCount }
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            key.load(context: .userInitiated, continuation: LoadContinuation("load of \(description)") { [weak self] outcome in
                self?.finishLoad(outcome, ifUnchangedSince: changeCount)
                waiter.resume(with: outcome.map { _ in () })
            })
        }
    }

    private func finishLoad(_ outcome: LoadContinuation<Value>.Outcome, ifUnchangedSince changeCount: Int) {
        let notify = state.withLock { state -> Value? in
            state.isLoading = false
            switch outcome {
            case .failure(let error):
                state.loadError = error  // the last good value stays
                return nil
            case .success(let loaded):
                state.loadError = nil
                // A local change made while loading is newer than what was loaded.
                guard state.changeCount == changeCount, let loaded else { return nil }
                state.value = loaded
                return loaded
            }
        }
        if let notify { broadcast(notify) }
    }

    private func receive(_ event: SharedSubscriber<Value>.Event) {
        let notify = state.withLock { state -> Value? in
            switch event {
            case .value(let value):
                state.value = value
                state.loadError = nil
                state.isLoading = false
                return value
            case .initialValue:
                state.value = state.initialValue
                state.loadError = nil
                state.isLoading = false
                return state.value
            case .failure(let error):
                state.loadError = error
                state.isLoading = false
                return nil
            case .loading(let isLoading):
                state.isLoading = isLoading
                return nil
            case .modify(let body):
                body(&state.value)
                state.isLoading = false
                return state.value
            case .errorCleared:
                state.loadError = nil
                return nil
            }
        }
        if let notify { broadcast(notify) }
    }

    private func broadcast(_ value: Value) {
        let observers = state.withLock { Array($0.observers.values) }
        for observer in observers { observer.yield(value) }
    }

    // MARK: Mutating and saving

    /// Mutates the value under the lock, tells observers, and saves (`.didSet`).
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let (result, value) = try state.withLock { state in
            let result = try body(&state.value)
            state.changeCount += 1
            return (result, state.value)
        }
        broadcast(value)
        requestSave(context: .didSet, waiter: nil)
        return result
    }

    /// `try await $shared.save()`: returns when the current value is durable.
    func save() async throws {
        try await withCheckedThrowingContinuation { waiter in
            requestSave(context: .userInitiated, waiter: waiter)
        }
    }

    private func requestSave(context: SaveContext, waiter: CheckedContinuation<Void, any Error>?) {
        guard let saver else {
            waiter?.resume()
            return
        }
        let valueToSave = state.withLock { state -> Value? in
            if state.isSaving {
                state.saveAgain = true
                if let waiter { state.nextWaiters.append(waiter) }
                return nil
            }
            state.isSaving = true
            if let waiter { state.currentWaiters.append(waiter) }
            prepareSave?(state.value)
            return state.value
        }
        if let valueToSave { startSave(valueToSave, context: context, saver: saver) }
    }

    private func startSave(_ value: Value, context: SaveContext, saver: any SharedKey<Value>) {
        saver.save(value, context: context, continuation: SaveContinuation("save of \(description)") { [weak self] result in
            self?.finishSave(result, saver: saver)
        })
    }

    private func finishSave(_ result: Result<Void, any Error>, saver: any SharedKey<Value>) {
        let (waiters, next) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], Value?) in
            switch result {
            case .success: state.saveError = nil
            case .failure(let error): state.saveError = error  // the value stays; the next save retries it
            }
            let waiters = state.currentWaiters
            state.currentWaiters = state.nextWaiters
            state.nextWaiters = []
            guard state.saveAgain else {
                state.isSaving = false
                return (waiters, nil)
            }
            state.saveAgain = false
            prepareSave?(state.value)
            return (waiters, state.value)
        }
        for waiter in waiters { waiter.resume(with: result) }
        if let next { startSave(next, context: .didSet, saver: saver) }
    }
}

/// A key whose saves are deltas against what it last saw (counters, logs). The reference calls
/// `prepareSave` under its lock with the value the next `save` will carry, so that the delta is
/// computed against exactly the remote changes (applied with `SharedSubscriber.yield(modifying:)`,
/// under the same lock) that value includes.
protocol DeltaSavingKey<Value>: SharedKey {
    func prepareSave(_ value: Value)
}

/// The key of `Shared(value:)`: nothing to load, save or observe.
struct UnpersistedKey<Value: Sendable>: SharedReaderKey {
    let id = UUID()
    func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) { continuation.resumeReturningInitialValue() }
    func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription { SharedSubscription {} }
}
