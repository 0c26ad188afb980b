import Synchronization

extension Replica {
    private struct DefaultState {
        var replica: Replica?
        var watchers: [UInt64: AsyncStream<Replica?>.Continuation] = [:]
        var nextWatcher: UInt64 = 0
    }

    private static let defaultState = Mutex(DefaultState())

    /// The replica that `.replicated`, `.counter`, `.log` and `.drinks` keys use when no `on:`
    /// is given.
    public static var `default`: Replica? { defaultState.withLock { $0.replica } }

    /// Makes `replica` the process default. Keys created without `on:` use it, including those
    /// created before this call: they bind now (their `Shared` loads what the replica stores, then
    /// saves the changes made to it meanwhile). Setting another default moves them to it; nil
    /// leaves them unbound (their saves fail with `SharingError.noDefaultReplica` until the next).
    public static func setDefault(_ replica: Replica?) {
        defaultState.withLock { state in
            state.replica = replica
            for watcher in state.watchers.values { watcher.yield(replica) }
        }
    }

    /// The default replica now, then each new one.
    static func defaultReplicas() -> AsyncStream<Replica?> {
        let (stream, continuation) = AsyncStream.makeStream(of: Replica?.self, bufferingPolicy: .bufferingNewest(1))
        let id = defaultState.withLock { state in
            let id = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[id] = continuation
            continuation.yield(state.replica)
            return id
        }
        continuation.onTermination = { _ in
            _ = defaultState.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// Which replica a built-in key reads and writes: one given with `on:`, or the process default
/// as it is at each moment.
enum ReplicaBinding: Sendable {
    case replica(Replica)
    case processDefault

    init(_ replica: Replica?) {
        self = replica.map(ReplicaBinding.replica) ?? .processDefault
    }

    /// The replica now (nil: the process has no default yet).
    var replica: Replica? {
        switch self {
        case .replica(let replica): replica
        case .processDefault: Replica.default
        }
    }

    /// Part of a key's `ID`: keys of the process default share state whichever replica it is.
    var identity: ObjectIdentifier? {
        if case .replica(let replica) = self { ObjectIdentifier(replica) } else { nil }
    }

    var isProcessDefault: Bool {
        if case .processDefault = self { true } else { false }
    }

    /// Runs `session` with the key's replica: once for a given one; for the process default,
    /// with the default now and again each time it changes (nil while there is none), one
    /// session at a time (the previous one is cancelled and has ended before the next starts).
    func watch(_ session: @escaping @Sendable (Replica?) async -> Void) -> SharedSubscription {
        let task: Task<Void, Never>
        switch self {
        case .replica(let replica):
            task = Task { await session(replica) }
        case .processDefault:
            task = Task {
                var current: Task<Void, Never>?
                for await replica in Replica.defaultReplicas() {
                    current?.cancel()
                    await current?.value
                    current = Task { await session(replica) }
                }
                current?.cancel()
            }
        }
        return SharedSubscription { task.cancel() }
    }

    /// How a built-in key follows its entries (those under `prefix`): on each replica it is bound
    /// to, `bind` runs, changes made while unbound are saved, `catchUp` takes what is stored, and
    /// `apply` every change after, until cancelled. `catchUp` returns whether the key is free of
    /// problems, which clears the "no default replica" error of a key that was waiting for one.
    func follow<Value>(
        prefix: String, key: String, subscriber: SharedSubscriber<Value>,
        bind: @escaping @Sendable (Replica) -> Void = { _ in },
        catchUp: @escaping @Sendable (Replica) throws -> Bool,
        apply: @escaping @Sendable (Replica, Change) -> Void
    ) -> SharedSubscription {
        let isProcessDefault = isProcessDefault
        return watch { replica in
            guard let replica else { return subscriber.yield(throwing: SharingError.noDefaultReplica(key: key)) }
            bind(replica)
            // Changes made while unbound (or on the previous default) are saved here now; the
            // save holds the stored entries it writes until it ends.
            if isProcessDefault { subscriber.requestSaveIfChanged() }
            // Until the replica stops. A stream that fell so far behind that it dropped changes
            // (a burst of 65,536 while this task could not run) starts over: subscribed again,
            // and caught up from the store, which holds what was dropped (a log element or a
            // counter slot missed would otherwise stay missing from the value).
            while !Task.isCancelled {
                let lost = ChangeLoss()
                let changes = await replica.changes(prefix: prefix, lost: lost)
                // Whatever was committed before the subscription started.
                do {
                    if try catchUp(replica), isProcessDefault { subscriber.yieldErrorCleared() }
                } catch {
                    subscriber.yield(throwing: error)
                }
                for await change in changes {
                    if lost.happened { break }
                    apply(replica, change)
                }
                guard lost.happened else { return }
            }
        }
    }
}
