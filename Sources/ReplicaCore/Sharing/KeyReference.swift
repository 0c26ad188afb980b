import Foundation
import Observation
import Synchronization
#if canImport(Combine)
import Combine
#endif

/// The one piece of state behind every `Shared`/`SharedReader` of a key: the value, its load
/// and save status, observers, and the key's subscription.
///
/// It takes part in Swift's Observation: reading `value` (or the status) inside
/// `withObservationTracking`, a SwiftUI view or an `@Observable` model is tracked, and every
/// change, local (`withLock`) or from the key (remote changes, loads), fires it.
///
/// Saves are serialised: at most one is in flight, and changes made meanwhile are saved together
/// once it finishes (only the newest value matters, and keys that save deltas compute them from
/// the live value). So saves reach storage in the order the value changed.
///
/// The lock is recursive, as in Sharing: a `withLock` body may read the value it changes.
final class KeyReference<Key: SharedReaderKey>: Reference, Observable, @unchecked Sendable {
    typealias Value = Key.Value

    let key: Key
    /// The key's `save`, for keys that can save (set by `makeSaving`); nil for read-only keys.
    private let saver: (@Sendable (Value, SaveContext, SaveContinuation) -> Void)?
    private let registrar = ObservationRegistrar()
    private let lock = NSRecursiveLock()
    #if canImport(Combine)
    private let subject = PassthroughSubject<Value, Never>()
    #endif

    // Everything below is guarded by `lock`.
    private var current: Value
    /// The initial value given to `@Shared`, if it was needed (and so evaluated).
    private var initialValue: Value?
    private var loading: Bool
    private var lastLoadError: (any Error)?
    private var lastSaveError: (any Error)?
    private var observers: [UUID: (deliver: @Sendable (Value) -> Void, end: @Sendable () -> Void)] = [:]
    private var subscription: SharedSubscription?
    /// Local changes made (`withLock`), and how many of them the last successful save covered.
    private var changeCount = 0
    private var savedChangeCount = 0
    private var isSaving = false
    /// The local changes the save in flight covers (its value was taken after this many).
    private var savingChangeCount = 0
    /// Local changes made since the save in flight took its value: saved when it finishes.
    private var saveAgain = false
    /// The local changes the last failed save covered (`setFromKey` lets the key's value replace
    /// them only if that save refused them for good and nothing changed since).
    private var refusedChangeCount = -1
    /// The key set the value while a save was in flight. Usually a newer change it held for the
    /// save's end; but a change the key was already delivering when the save began is older than
    /// the save, and replaced its value here for good. So the save's end reads the stored value
    /// again (the built-in keys answer at once, with the newest).
    private var setByKeyWhileSaving = false
    /// Waiting for the save in flight (or for the next one when `saveAgain`).
    private var currentWaiters: [CheckedContinuation<Void, any Error>] = []
    private var nextWaiters: [CheckedContinuation<Void, any Error>] = []

    private init(key: Key, saver: (@Sendable (Value, SaveContext, SaveContinuation) -> Void)?,
                 value: Value, initialValue: Value?, loading: Bool, loadError: (any Error)?) {
        self.key = key
        self.saver = saver
        current = value
        self.initialValue = initialValue
        self.loading = loading
        lastLoadError = loadError
    }

    /// A reference to a read-only key.
    static func make(key: Key, initialValue: () -> Value) -> KeyReference {
        make(key: key, saver: nil, initialValue: initialValue)
    }

    /// Creates the reference: asks the key for the stored value first, and evaluates
    /// `initialValue` only if storage has none (or the key answers later), as Sharing documents.
    private static func make(
        key: Key, saver: (@Sendable (Value, SaveContext, SaveContinuation) -> Void)?, initialValue: () -> Value
    ) -> KeyReference {
        let firstLoad = FirstLoad<Key>()
        key.load(context: .userInitiated, continuation: LoadContinuation("load of \(key.readable)") { firstLoad.deliver($0) })
        let reference: KeyReference
        var evaluated: Value?
        switch firstLoad.takeIfArrived() {
        case .success(let stored?)?:
            reference = KeyReference(key: key, saver: saver, value: stored, initialValue: nil, loading: false, loadError: nil)
        case .success(nil)?:
            evaluated = initialValue()
            reference = KeyReference(key: key, saver: saver, value: evaluated!, initialValue: evaluated, loading: false, loadError: nil)
        case .failure(let error)?:
            evaluated = initialValue()
            reference = KeyReference(key: key, saver: saver, value: evaluated!, initialValue: evaluated, loading: false, loadError: error)
        case nil:  // the key loads asynchronously: show the initial value meanwhile
            evaluated = initialValue()
            reference = KeyReference(key: key, saver: saver, value: evaluated!, initialValue: evaluated, loading: true, loadError: nil)
        }
        firstLoad.attach(reference)
        reference.subscribe(context: evaluated.map { LoadContext<Value>.initialValue($0) } ?? .userInitiated)
        return reference
    }

    private func subscribe(context: LoadContext<Value>) {
        let subscriber = SharedSubscriber<Value>(
            callback: { [weak self] event in self?.receive(event) },
            modifyValue: { [weak self] body in self?.modifyFromKey(body) },
            readValue: { [weak self] body in self?.readFromKey(body) })
        let subscription = key.subscribe(context: context, subscriber: subscriber)
        locked { self.subscription = subscription }
    }

    deinit {
        subscription?.cancel()
        for observer in observers.values { observer.end() }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: Observation

    /// Runs `change`, then tells observers of `keyPath` (Observation's `willSet` and `didSet`,
    /// both once the change is made). Where SwiftUI exists, a change made off the main thread is
    /// announced on the main thread, as Sharing does (SwiftUI expects it there); elsewhere
    /// observers hear it on the changing thread, before this returns.
    ///
    /// Not `willSet` before the change: `withObservationTracking` calls `onChange` at `willSet`,
    /// and an observer that then reads the value on another thread (its actor: the usual
    /// re-arming `Task { @MainActor in ... }`) could read it before the change was made, track
    /// it again, and so miss this change for good. An outside tester saw 8 of 30 remote changes
    /// stay unseen that way.
    private func announcing<Member, R>(_ keyPath: KeyPath<KeyReference, Member> & Sendable, _ change: () throws -> R) rethrows -> R {
        // Also when `change` throws: a `withLock` body may change the value, then throw.
        defer { announce(keyPath) }
        return try change()
    }

    /// Tells observers of `keyPath` of a change already made (see `announcing`).
    private func announce<Member>(_ keyPath: KeyPath<KeyReference, Member> & Sendable) {
        #if canImport(SwiftUI)
        if Thread.isMainThread {
            registrar.withMutation(of: self, keyPath: keyPath) {}
        } else {
            DispatchQueue.main.async { self.registrar.withMutation(of: self, keyPath: keyPath) {} }
        }
        #else
        registrar.withMutation(of: self, keyPath: keyPath) {}
        #endif
    }

    /// Changes the load and save status (observed as one property: they change together).
    /// A change that leaves it as it was (an error cleared that was not there) is not announced:
    /// observers would see a change with nothing changed (one extra render).
    private func updateStatus(_ change: (inout Status) -> Void) {
        let changes = locked { () -> Bool in
            var status = lockedStatus
            change(&status)
            return !status.isUnchanged(from: lockedStatus)
        }
        guard changes else { return }
        announcing(\.status) {
            locked {
                var status = lockedStatus
                change(&status)
                (loading, lastLoadError, lastSaveError) = (status.isLoading, status.loadError, status.saveError)
            }
        }
    }

    /// The status as the guarded properties hold it (read under the lock).
    private var lockedStatus: Status { Status(isLoading: loading, loadError: lastLoadError, saveError: lastSaveError) }

    struct Status {
        var isLoading: Bool
        var loadError: (any Error)?
        var saveError: (any Error)?

        /// The same flag and no errors where there were none (errors are not `Equatable`: a
        /// new one always counts as a change).
        func isUnchanged(from other: Status) -> Bool {
            isLoading == other.isLoading && loadError == nil && other.loadError == nil
                && saveError == nil && other.saveError == nil
        }
    }

    var status: Status {
        registrar.access(self, keyPath: \.status)
        return locked { lockedStatus }
    }

    // MARK: Reading

    var value: Value {
        registrar.access(self, keyPath: \.value)
        return locked { current }
    }

    var isLoading: Bool { status.isLoading }
    var loadError: (any Error)? { status.loadError }
    var saveError: (any Error)? { status.saveError }

    var description: String { key.readable }

    func observe(_ deliver: @escaping @Sendable (Value) -> Void, end: @escaping @Sendable () -> Void) -> SharedSubscription {
        let id = UUID()
        locked {
            observers[id] = (deliver, end)
            deliver(current)
        }
        return SharedSubscription { [weak self] in
            self?.locked { _ = self?.observers.removeValue(forKey: id) }
        }
    }

    /// Under the lock, right after `current` changed: observers get values in change order.
    private func deliverToObservers() {
        for observer in observers.values { observer.deliver(current) }
    }

    /// After a change, outside the lock (Combine subscribers run arbitrary code): sends the
    /// value as it is now, so that the last value sent is the current one even when an observer
    /// told of the change changed it again before this (it sent its own value first).
    private func publish() {
        #if canImport(Combine)
        subject.send(locked { current })
        #endif
    }

    #if canImport(Combine)
    var publisher: AnyPublisher<Value, Never> {
        Deferred { [subject] in subject.prepend(self.value) }.eraseToAnyPublisher()
    }
    #endif

    func touch() {
        announcing(\.value) {}
    }

    // MARK: Changes from the key

    /// Sets the value from the key, unless a local change is waiting for a save: one made
    /// while a save was in flight (saved when it ends), one whose save has not started yet
    /// (`withLock` returns before it does), or one whose save failed. That change is saved now
    /// and, being later, wins (a remote value replaced it, lost with its `saveError` still
    /// showing). Only the change a save refused for good (too large, a bad key: `givesWay`)
    /// gives way to the key's value, since it will never be saved.
    private func setFromKey(_ value: Value?, clearingLoadError: Bool) {
        defer { if clearingLoadError { updateStatus { $0.loadError = nil; $0.isLoading = false } } }
        let outcome = locked { () -> KeyValueOutcome in
            guard let value, !saveAgain else { return .refused }
            if !isSaving && changeCount != savedChangeCount {
                guard changeCount == refusedChangeCount, let error = lastSaveError, Self.givesWay(error) else { return .retrySave }
                savedChangeCount = changeCount  // never to be saved: the stored value stands
            }
            if isSaving { setByKeyWhileSaving = true }
            current = value
            deliverToObservers()
            return .set
        }
        switch outcome {
        case .set:
            announce(\.value)
            publish()
        case .refused:
            break  // no change: observers are not told of one (an extra render)
        case .retrySave:
            requestSave(context: .didSet, waiter: nil)
        }
    }

    /// Whether a save's error refuses the value for good: this program's refusals (too large,
    /// a bad key, newer data), or a replica that shut down or is leaving. A failure that may
    /// pass (the disk, the clock, an identity clash), and any error of a key of the program's
    /// own, keeps the change to be saved again.
    static func givesWay(_ error: any Error) -> Bool {
        if let error = error as? ReplicaError { return !error.isTransient }
        if let error = error as? SharingError {
            if case .noDefaultReplica = error { return false }  // it saves once a default is set
            return true
        }
        return false
    }

    private func receive(_ event: SharedSubscriber<Value>.Event) {
        switch event {
        case .value(let value):
            setFromKey(value, clearingLoadError: true)
        case .initialValue:
            // Storage lost its value: show the initial value, if it was ever evaluated.
            setFromKey(locked { initialValue }, clearingLoadError: true)
        case .failure(let error):
            updateStatus { $0.loadError = error; $0.isLoading = false }  // the last good value stays
        case .loading(let isLoading):
            updateStatus { $0.isLoading = isLoading }
        case .errorCleared:
            updateStatus { $0.loadError = nil; $0.isLoading = false }
        case .saveIfChanged:
            // Local changes not saved yet, or a save that failed (the caller asked for it).
            if locked({ changeCount > savedChangeCount || lastSaveError != nil }) { requestSave(context: .didSet, waiter: nil) }
        }
    }

    private func modifyFromKey(_ body: (inout Value) -> Void) {
        announcing(\.value) {
            locked {
                body(&current)
                deliverToObservers()
            }
        }
        publish()
    }

    private func readFromKey(_ body: (Value) -> Void) {
        locked { body(current) }
    }

    // MARK: Loading

    /// `try await $shared.load()`.
    func load() async throws {
        updateStatus { $0.isLoading = true }
        // A local change not saved yet (or being saved) is newer than what storage holds now:
        // a load must not put the stored value back over it.
        let (changeCount, unsaved) = locked { (self.changeCount, self.changeCount > self.savedChangeCount || self.isSaving) }
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            key.load(context: .userInitiated, continuation: LoadContinuation("load of \(key.readable)") { [weak self] outcome in
                self?.finishLoad(outcome, ifUnchangedSince: changeCount, unsavedAtStart: unsaved)
                waiter.resume(with: outcome.map { _ in () })
            })
        }
    }

    fileprivate func finishLoad(_ outcome: LoadContinuation<Value>.Outcome, ifUnchangedSince changeCount: Int, unsavedAtStart: Bool) {
        switch outcome {
        case .failure(let error):
            updateStatus { $0.loadError = error; $0.isLoading = false }  // the last good value stays
        case .success(let loaded):
            // A local change made while loading, or one not yet saved when it began, is newer
            // than what was loaded.
            if let loaded, !unsavedAtStart, locked({ self.changeCount == changeCount }) { setFromKey(loaded, clearingLoadError: false) }
            updateStatus { $0.loadError = nil; $0.isLoading = false }
        }
    }

    // MARK: Mutating and saving

    /// Mutates the value under the lock, tells observers, and saves (`.didSet`).
    fileprivate func mutate<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let result = try announcing(\.value) {
            try locked { () -> R in
                let result = try body(&current)
                changeCount += 1
                deliverToObservers()
                return result
            }
        }
        publish()
        requestSave(context: .didSet, waiter: nil)
        return result
    }

    /// `try await $shared.save()`: returns when the current value is durable.
    fileprivate func saveNow() async throws {
        try await withCheckedThrowingContinuation { waiter in
            requestSave(context: .userInitiated, waiter: waiter)
        }
    }

    private func requestSave(context: SaveContext, waiter: CheckedContinuation<Void, any Error>?) {
        guard let saver else {
            waiter?.resume()
            return
        }
        let start = locked { () -> (Value, Int)? in
            if isSaving {
                // `withLock` then `save()`: the save in flight already holds every change, so
                // wait for it. Saving the same value again would write it under a second
                // version, which every member would then see as one more change.
                if !saveAgain && changeCount == savingChangeCount {
                    if let waiter { currentWaiters.append(waiter) }
                    return nil
                }
                saveAgain = true
                if let waiter { nextWaiters.append(waiter) }
                return nil
            }
            isSaving = true
            savingChangeCount = changeCount
            if let waiter { currentWaiters.append(waiter) }
            return (current, changeCount)
        }
        if case let (value, changes)? = start { startSave(value, covering: changes, context: context, saver: saver) }
    }

    private func startSave(
        _ value: Value, covering changes: Int, context: SaveContext,
        saver: @Sendable (Value, SaveContext, SaveContinuation) -> Void
    ) {
        // Held strongly until the save ends: changes made while it was in flight are saved
        // when it ends, even if every `Shared` of the key is gone by then (a function-scope
        // `@Shared` that changed twice and returned lost its second change).
        saver(value, context, SaveContinuation("save of \(key.readable)") { result in
            self.finishSave(result, covering: changes)
        })
    }

    private func finishSave(_ result: Result<Void, any Error>, covering changes: Int) {
        updateStatus { status in
            switch result {
            case .success: status.saveError = nil
            case .failure(let error): status.saveError = error  // the value stays; the next save retries it
            }
        }
        // Also after a failure: the value the key delivered meanwhile may be older than what
        // is stored (one already on its way when the save began).
        let reload = locked { () -> Bool in setByKeyWhileSaving && !saveAgain }
        if reload {
            // Before the save's callers resume: they see the value stored.
            key.load(context: .userInitiated, continuation: LoadContinuation("reload of \(key.readable) after its save") { [weak self] outcome in
                self?.finishLoad(outcome, ifUnchangedSince: changes, unsavedAtStart: false)
            })
        }
        let (waiters, next) = locked { () -> ([CheckedContinuation<Void, any Error>], (Value, Int)?) in
            // A failed save whose value the key replaced meanwhile (a newer value, held for its
            // end) has nothing left to save: retried, it wrote that older remote value back over
            // the next one.
            if case .failure = result {
                refusedChangeCount = changes
                if setByKeyWhileSaving && !saveAgain { savedChangeCount = max(savedChangeCount, changes) }
            }
            setByKeyWhileSaving = false  // (the reload above sets it too: the save is still in flight)
            if case .success = result { savedChangeCount = max(savedChangeCount, changes) }
            let waiters = currentWaiters
            currentWaiters = nextWaiters
            nextWaiters = []
            guard saveAgain else {
                isSaving = false
                return (waiters, nil)
            }
            saveAgain = false
            savingChangeCount = changeCount
            return (waiters, (current, changeCount))
        }
        for waiter in waiters { waiter.resume(with: result) }
        if case let (value, changes)? = next, let saver { startSave(value, covering: changes, context: .didSet, saver: saver) }
    }
}

/// What `setFromKey` did with a value from the key.
private enum KeyValueOutcome {
    case set
    case refused
    /// Refused for a local change whose save failed or has not started yet: it is saved now.
    case retrySave
}

extension KeyReference: MutableReference where Key: SharedKey {
    /// A reference to a key that saves.
    static func make(key: Key, initialValue: () -> Value) -> KeyReference {
        make(key: key, saver: { key.save($0, context: $1, continuation: $2) }, initialValue: initialValue)
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R { try mutate(body) }
    func save() async throws { try await saveNow() }
}

/// Hands the first load's result to the reference being made: at once if the key answered
/// synchronously (as the built-in keys do), else to the reference when it arrives.
private final class FirstLoad<Key: SharedReaderKey>: Sendable {
    private enum Stage {
        case asked
        case arrived(LoadContinuation<Key.Value>.Outcome)
        case awaited
        case done
    }

    private struct State {
        var stage = Stage.asked
        weak var reference: KeyReference<Key>?
    }

    private let state = Mutex(State())

    func deliver(_ outcome: LoadContinuation<Key.Value>.Outcome) {
        let reference = state.withLock { state -> KeyReference<Key>? in
            switch state.stage {
            case .asked:
                state.stage = .arrived(outcome)
                return nil
            case .awaited:
                if let reference = state.reference {
                    state.stage = .done
                    return reference
                }
                state.stage = .arrived(outcome)
                return nil
            case .arrived, .done:
                return nil  // ResumeOnce lets one outcome through
            }
        }
        reference?.finishLoad(outcome, ifUnchangedSince: 0, unsavedAtStart: false)
    }

    /// The outcome if the key already answered; otherwise the reference will get it.
    func takeIfArrived() -> LoadContinuation<Key.Value>.Outcome? {
        state.withLock { state in
            if case .arrived(let outcome) = state.stage {
                state.stage = .done
                return outcome
            }
            state.stage = .awaited
            return nil
        }
    }

    func attach(_ reference: KeyReference<Key>) {
        let late = state.withLock { state -> LoadContinuation<Key.Value>.Outcome? in
            state.reference = reference
            guard case .arrived(let outcome) = state.stage else { return nil }
            state.stage = .done
            return outcome
        }
        if let late { reference.finishLoad(late, ifUnchangedSince: 0, unsavedAtStart: false) }
    }
}

extension SharedReaderKey {
    /// How messages name the key: its description, if it has one (the built-in keys do).
    var readable: String { String(describing: self) }
}
