import Foundation
import Synchronization

extension SharedReaderKey {
    /// A counter that never loses an increment: `Shared<Int>` over one slot per replica
    /// incarnation (see `CounterFamily`). `withLock { $0 += 5 }` saves a delta of +5 to this
    /// replica's slot; the value is the sum of every slot, remote ones included.
    ///
    /// The value starts from the stored sum (0 when nothing is stored): the initial value given
    /// to `@Shared` is not used, as a counter's "no value" is 0.
    public static func counter(_ name: String, on replica: Replica? = nil) -> Self where Self == CounterKey {
        CounterKey(name, on: replica)
    }
}

/// The key behind `.counter("name")`.
///
/// Delta semantics: the key keeps `presented`, the value the `Shared` reference holds minus its
/// local changes not yet handed to a save. When a save is prepared (under the reference's lock)
/// `value - presented` is added to the pending delta; a remote slot change of `d` is applied to
/// the reference *and* to `presented` in one step under the same lock, so a remote change that
/// arrives while a local delta is waiting or being saved is counted once and the local delta too.
public struct CounterKey: SharedKey, DeltaSavingKey {
    public typealias Value = Int

    public struct ID: Hashable, Sendable {
        var name: String
        var replica: ObjectIdentifier?
    }

    public let name: String
    let replica: Replica?
    let state = CounterKeyState()

    init(_ name: String, on replica: Replica?) {
        self.name = name
        self.replica = replica ?? Replica.default
    }

    public var id: ID { ID(name: name, replica: replica.map(ObjectIdentifier.init)) }

    private var prefix: String { FamilyKey.counterPrefix(name) }

    private func ownSlot(_ replica: Replica) -> String {
        FamilyKey.counterSlot(name, incarnation: replica.identity.incarnation)
    }

    // MARK: Load and subscribe

    public func load(context: LoadContext<Int>, continuation: LoadContinuation<Int>) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let entries: [Entry]
        do {
            entries = try replica.reader.entries(prefix: prefix)
        } catch {
            return continuation.resume(throwing: error)
        }
        let own = ownSlot(replica)
        if let subscriber = state.subscriber, context.initialValue == nil {
            // An explicit reload: bring the live value up to date like remote changes.
            for entry in entries { perform(state.observe(entry, ownSlot: own), subscriber: subscriber, replica: replica) }
            if let problem = state.firstProblem { return continuation.resume(throwing: problem) }
            return continuation.resumeReturningInitialValue()  // keeps the (updated) value
        }
        let (value, effects) = state.reset(from: entries, ownSlot: own)
        for effect in effects { report(effect, replica: replica) }
        continuation.resume(returning: value)
    }

    public func subscribe(context: LoadContext<Int>, subscriber: SharedSubscriber<Int>) -> SharedSubscription {
        guard let replica else { return SharedSubscription {} }
        state.subscriber = subscriber
        let (prefix, own, state) = (prefix, ownSlot(replica), state)
        let task = Task {
            let changes = await replica.changes(prefix: prefix)
            // Whatever was committed between the load and the subscription starting.
            for entry in (try? replica.reader.entries(prefix: prefix)) ?? [] {
                perform(state.observe(entry, ownSlot: own), subscriber: subscriber, replica: replica)
            }
            if let problem = state.firstProblem { subscriber.yield(throwing: problem) }
            for await change in changes {
                perform(state.observe(change.entry, ownSlot: own), subscriber: subscriber, replica: replica)
            }
        }
        return SharedSubscription {
            task.cancel()
            state.subscriber = nil
        }
    }

    // MARK: Save

    func prepareSave(_ value: Int) { state.prepareSave(value) }

    public func save(_ value: Int, context: SaveContext, continuation: SaveContinuation) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let amount = state.beginSave(value)
        let (name, own, state) = (name, ownSlot(replica), state)
        guard amount != 0 else {
            perform(state.finishSave(committed: nil, amount: 0, ownSlot: own), subscriber: state.subscriber, replica: replica)
            return continuation.resume()
        }
        Task {
            do {
                let entry = try await replica.addToCounter(name, delta: amount)
                perform(state.finishSave(committed: entry, amount: amount, ownSlot: own), subscriber: state.subscriber, replica: replica)
                continuation.resume()
            } catch {
                perform(state.finishSave(committed: nil, amount: amount, ownSlot: own), subscriber: state.subscriber, replica: replica)
                continuation.resume(throwing: error)
            }
        }
    }

    // MARK: Effects

    private func perform(_ effects: [CounterKeyState.Effect], subscriber: SharedSubscriber<Int>?, replica: Replica) {
        for effect in effects {
            switch effect {
            case .add(let delta):
                guard let subscriber else { continue }
                let state = state
                subscriber.yield(modifying: { value in
                    value &+= delta
                    state.presentedDidChange(by: delta)
                })
            case .problem(_, let error):
                subscriber?.yield(throwing: error)
                report(effect, replica: replica)
            case .cleared:
                subscriber?.yieldErrorCleared()
                report(effect, replica: replica)
            }
        }
    }

    private func report(_ effect: CounterKeyState.Effect, replica: Replica) {
        let subject = "counter \(name)"
        switch effect {
        case .add: break
        case .problem(let entry, let error):
            replica.reportUnreadable(entry, of: subject, error: error)
        case .cleared:
            Task { await replica.clearLoadError(subject) }
        }
    }
}

/// The bookkeeping of one counter key (see `CounterKey`), behind a lock.
final class CounterKeyState: Sendable {
    enum Effect {
        /// Add this to the shared value (and to `presented`, in the same step).
        case add(Int)
        case problem(Entry, SharingError)
        /// Every slot is readable again.
        case cleared
    }

    private struct Slot {
        var version: Version
        var total: Int
    }

    private struct State {
        /// The last readable total of every slot, by key.
        var slots: [String: Slot] = [:]
        var presented = 0
        /// Local deltas not yet handed to `Replica.addToCounter`.
        var pending = 0
        /// The delta being saved, if a save is in flight.
        var inflight: Int?
        /// Newest entry of our own slot seen while a save was in flight (settled when it ends).
        var deferredOwn: Entry?
        var problems: [String: SharingError] = [:]
        var prepared = false
        var subscriber: SharedSubscriber<Int>?
    }

    private let state = Mutex(State())

    var subscriber: SharedSubscriber<Int>? {
        get { state.withLock { $0.subscriber } }
        set { state.withLock { $0.subscriber = newValue } }
    }

    var firstProblem: SharingError? { state.withLock { $0.problems.sorted { $0.key < $1.key }.first?.value } }

    /// The first load: every slot read afresh; returns the sum.
    func reset(from entries: [Entry], ownSlot: String) -> (Int, [Effect]) {
        state.withLock { state in
            var effects: [Effect] = []
            for entry in entries {
                effects += Self.absorb(entry, into: &state)
            }
            let sum = state.slots.values.reduce(0) { $0 &+ $1.total } &+ state.pending &+ (state.inflight ?? 0)
            state.presented = sum
            return (sum, effects.filter { if case .add = $0 { false } else { true } })
        }
    }

    /// A slot entry from the store or a change: returns what to do with the shared value.
    func observe(_ entry: Entry, ownSlot: String) -> [Effect] {
        state.withLock { state in
            if entry.key == ownSlot && state.inflight != nil {
                // Our own slot while we are saving to it: settled when the save ends.
                if state.deferredOwn.map({ entry.version > $0.version }) ?? true { state.deferredOwn = entry }
                return []
            }
            return Self.absorb(entry, into: &state)
        }
    }

    private static func absorb(_ entry: Entry, into state: inout State) -> [Effect] {
        if let slot = state.slots[entry.key], entry.version <= slot.version { return [] }
        let total: Int
        do {
            total = try CounterFamily.total(of: entry)
        } catch {
            state.problems[entry.key] = error
            return [.problem(entry, error)]  // the slot keeps its last readable total
        }
        let old = state.slots[entry.key]?.total ?? 0
        state.slots[entry.key] = Slot(version: entry.version, total: total)
        var effects: [Effect] = []
        if total != old { effects.append(.add(total &- old)) }
        if state.problems.removeValue(forKey: entry.key) != nil && state.problems.isEmpty { effects.append(.cleared) }
        return effects
    }

    /// Called by the reference, under its lock, with the value the next save carries.
    func prepareSave(_ value: Int) {
        state.withLock { state in
            state.pending &+= value &- state.presented
            state.presented = value
            state.prepared = true
        }
    }

    /// Applied under the reference's lock together with the same change to the shared value.
    func presentedDidChange(by delta: Int) {
        state.withLock { $0.presented &+= delta }
    }

    /// Takes the pending delta for a save.
    func beginSave(_ value: Int) -> Int {
        state.withLock { state in
            if !state.prepared {  // a save not made through a SharedReference
                state.pending &+= value &- state.presented
                state.presented = value
            }
            state.prepared = false
            let amount = state.pending
            state.pending = 0
            state.inflight = amount
            return amount
        }
    }

    /// Ends a save: `committed` is our slot's entry if the increment of `amount` was committed.
    /// Whatever else changed our slot meanwhile (another writer in this process) becomes an effect.
    func finishSave(committed: Entry?, amount: Int, ownSlot: String) -> [Effect] {
        state.withLock { state in
            state.inflight = nil
            if committed == nil { state.pending &+= amount }  // retried by the next save
            let candidates = [state.deferredOwn, committed].compactMap { $0 }
            state.deferredOwn = nil
            guard let newest = candidates.max(by: { $0.version < $1.version }) else { return [] }
            if let slot = state.slots[ownSlot], newest.version <= slot.version { return [] }
            guard let total = try? CounterFamily.total(of: newest) else { return Self.absorb(newest, into: &state) }
            let old = state.slots[ownSlot]?.total ?? 0
            state.slots[ownSlot] = Slot(version: newest.version, total: total)
            // The committed amount is already in the shared value (it was a local change).
            let delta = total &- old &- (committed == nil ? 0 : amount)
            return delta == 0 ? [] : [.add(delta)]
        }
    }
}
