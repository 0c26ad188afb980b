import Foundation
import Synchronization

extension SharedReaderKey {
    /// A log that never loses a concurrent addition: `Shared<[Element]>` over one entry per
    /// element (see `LogFamily`). A save writes only the elements added, changed or removed since
    /// the key last saw the array, in one commit. The array is kept sorted by `orderedBy`, ties
    /// broken by id; it starts from what is stored (the initial value given to `@Shared` is not used).
    public static func log<Element, ID: Hashable & LosslessStringConvertible, Order: Comparable>(
        _ name: String, id: KeyPath<Element, ID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable,
        on replica: Replica? = nil
    ) -> Self where Self == LogKey<Element> {
        LogKey(LogFamily(name, id: id, orderedBy: order), on: replica)
    }

    /// A log whose elements have a UUID id.
    public static func log<Element, Order: Comparable>(
        _ name: String, id: KeyPath<Element, UUID> & Sendable, orderedBy order: KeyPath<Element, Order> & Sendable,
        on replica: Replica? = nil
    ) -> Self where Self == LogKey<Element> {
        LogKey(LogFamily(name, id: id, orderedBy: order), on: replica)
    }
}

/// The key behind `.log("name", id:, orderedBy:)`.
///
/// Like `CounterKey`, it keeps `presented` (element by id, as the reference had them when the
/// last save was prepared, plus remote changes applied since) and diffs each saved array
/// against it; remote element changes are applied to the array and to `presented` in one step
/// under the reference's lock. A remote change never replaces an element changed locally and
/// not yet saved: that local change is saved next and, being later, wins.
public struct LogKey<Element: Codable & Sendable & Equatable>: SharedKey, DeltaSavingKey {
    public typealias Value = [Element]

    public struct ID: Hashable, Sendable {
        var name: String
        var replica: ObjectIdentifier?
    }

    public let family: LogFamily<Element>
    let replica: Replica?
    let state: LogKeyState<Element>

    init(_ family: LogFamily<Element>, on replica: Replica?) {
        self.family = family
        self.replica = replica ?? Replica.default
        state = LogKeyState(family: family)
    }

    public var id: ID { ID(name: family.name, replica: replica.map(ObjectIdentifier.init)) }

    // MARK: Load and subscribe

    public func load(context: LoadContext<[Element]>, continuation: LoadContinuation<[Element]>) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let entries: [Entry]
        do {
            entries = try replica.reader.entries(prefix: family.prefix)
        } catch {
            return continuation.resume(throwing: error)
        }
        if let subscriber = state.subscriber, context.initialValue == nil {
            for entry in entries { perform(state.observe(entry), subscriber: subscriber, replica: replica) }
            if let problem = state.firstProblem { return continuation.resume(throwing: problem) }
            return continuation.resumeReturningInitialValue()  // keeps the (updated) value
        }
        let (elements, problems) = state.reset(from: entries)
        for (entry, error) in problems { report(.problem(entry, error), replica: replica) }
        continuation.resume(returning: elements)
    }

    public func subscribe(context: LoadContext<[Element]>, subscriber: SharedSubscriber<[Element]>) -> SharedSubscription {
        guard let replica else { return SharedSubscription {} }
        state.subscriber = subscriber
        let (prefix, state) = (family.prefix, state)
        let task = Task {
            let changes = await replica.changes(prefix: prefix)
            for entry in (try? replica.reader.entries(prefix: prefix)) ?? [] {
                perform(state.observe(entry), subscriber: subscriber, replica: replica)
            }
            if let problem = state.firstProblem { subscriber.yield(throwing: problem) }
            for await change in changes {
                perform(state.observe(change.entry), subscriber: subscriber, replica: replica)
            }
        }
        return SharedSubscription {
            task.cancel()
            state.subscriber = nil
        }
    }

    // MARK: Save

    func prepareSave(_ value: [Element]) { state.prepareSave(value) }

    public func save(_ value: [Element], context: SaveContext, continuation: SaveContinuation) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let batch = state.beginSave(value)
        guard !batch.isEmpty else {
            state.finishSave(failed: nil)
            return continuation.resume()
        }
        let (family, state) = (family, state)
        Task {
            var requests: [Replica.WriteRequest] = []
            var refused: [SharingError] = []
            do {
                for (id, change) in batch.sorted(by: { $0.key < $1.key }) {
                    let key = family.key(forID: id)
                    // Never overwrite (or remove) an element stored by a newer schema.
                    if let stored = try replica.reader.entry(for: key), !stored.isTombstone, stored.schema > family.schema {
                        refused.append(.newerSchema(key: key, stored: stored.schema, known: family.schema))
                        continue
                    }
                    switch change {
                    case .put(let element): requests.append(try family.put(element))
                    case .remove: requests.append(family.removal(ofID: id))
                    }
                }
                try await replica.write(requests, refusingNewerSchemaThan: family.schema)
            } catch {
                state.finishSave(failed: batch)
                return continuation.resume(throwing: error)
            }
            state.finishSave(failed: nil)
            // Local additions were appended where the caller put them: put them in order.
            state.subscriber?.yield(modifying: { family.sortInPlace(&$0) })
            if let first = refused.first { continuation.resume(throwing: first) } else { continuation.resume() }
        }
    }

    // MARK: Effects

    private func perform(_ effects: [LogKeyState<Element>.Effect], subscriber: SharedSubscriber<[Element]>?, replica: Replica) {
        for effect in effects {
            switch effect {
            case .apply(let id, let element):
                guard let subscriber else { continue }
                let state = state
                subscriber.yield(modifying: { array in state.applyRemote(id: id, element: element, to: &array) })
            case .problem(_, let error):
                subscriber?.yield(throwing: error)
                report(effect, replica: replica)
            case .cleared:
                subscriber?.yieldErrorCleared()
                report(effect, replica: replica)
            }
        }
    }

    private func report(_ effect: LogKeyState<Element>.Effect, replica: Replica) {
        let subject = "log \(family.name)"
        switch effect {
        case .apply: break
        case .problem(let entry, let error):
            replica.reportUnreadable(entry, of: subject, error: error)
        case .cleared:
            Task { await replica.clearLoadError(subject) }
        }
    }
}

extension LogFamily {
    func sortInPlace(_ elements: inout [Element]) {
        elements.sort(by: inOrder)
    }
}

/// The bookkeeping of one log key (see `LogKey`), behind a lock.
final class LogKeyState<Element: Codable & Sendable & Equatable>: Sendable {
    enum Change: Sendable {
        case put(Element)
        case remove
    }

    enum Effect {
        /// Element `id` is now `element` (nil: removed).
        case apply(id: String, element: Element?)
        case problem(Entry, SharingError)
        case cleared
    }

    private struct State {
        /// Newest version seen of every element entry, by id.
        var versions: [String: Version] = [:]
        var presented: [String: Element] = [:]
        /// Local changes not yet handed to a save.
        var pending: [String: Change] = [:]
        var problems: [String: SharingError] = [:]
        var prepared = false
        var subscriber: SharedSubscriber<[Element]>?
    }

    private let family: LogFamily<Element>
    private let state = Mutex(State())

    init(family: LogFamily<Element>) { self.family = family }

    var subscriber: SharedSubscriber<[Element]>? {
        get { state.withLock { $0.subscriber } }
        set { state.withLock { $0.subscriber = newValue } }
    }

    var firstProblem: SharingError? { state.withLock { $0.problems.sorted { $0.key < $1.key }.first?.value } }

    /// The first load: every element read afresh.
    func reset(from entries: [Entry]) -> ([Element], [(Entry, SharingError)]) {
        state.withLock { state in
            var problems: [(Entry, SharingError)] = []
            for entry in entries {
                for effect in absorb(entry, into: &state) {
                    switch effect {
                    case .apply(let id, let element): state.presented[id] = element
                    case .problem(let entry, let error): problems.append((entry, error))
                    case .cleared: break
                    }
                }
            }
            return (family.sorted(Array(state.presented.values)), problems)
        }
    }

    func observe(_ entry: Entry) -> [Effect] {
        state.withLock { state in absorb(entry, into: &state) }
    }

    private func absorb(_ entry: Entry, into state: inout State) -> [Effect] {
        let id = family.id(fromKey: entry.key)
        if let seen = state.versions[id], entry.version <= seen { return [] }
        state.versions[id] = entry.version
        let element: Element?
        do {
            element = try family.element(in: entry)
        } catch {
            let error = error as? SharingError ?? .undecodable(key: entry.key, reason: "\(error)")
            state.problems[id] = error
            return [.problem(entry, error)]  // the last readable version stays
        }
        var effects: [Effect] = [.apply(id: id, element: element)]
        if state.problems.removeValue(forKey: id) != nil && state.problems.isEmpty { effects.append(.cleared) }
        return effects
    }

    /// Under the reference's lock: element `id` changed in storage. The array takes it unless the
    /// caller changed that element and has not saved it yet.
    func applyRemote(id: String, element: Element?, to array: inout [Element]) {
        state.withLock { state in
            let index = array.firstIndex { family.id(of: $0) == id }
            let current = index.map { array[$0] }
            if current == state.presented[id] {
                switch (index, element) {
                case (let index?, let element?): array[index] = element
                case (nil, let element?): array.append(element)
                case (let index?, nil): array.remove(at: index)
                case (nil, nil): break
                }
                family.sortInPlace(&array)
            }
            state.presented[id] = element
        }
    }

    /// Under the reference's lock: the array the next save carries. Records its differences
    /// from `presented` as pending changes.
    func prepareSave(_ value: [Element]) {
        state.withLock { state in
            diff(value, into: &state)
            state.prepared = true
        }
    }

    private func diff(_ value: [Element], into state: inout State) {
        var next: [String: Element] = [:]
        for element in value { next[family.id(of: element)] = element }  // a repeated id: the last wins
        for (id, element) in next where state.presented[id] != element { state.pending[id] = .put(element) }
        for id in state.presented.keys where next[id] == nil { state.pending[id] = .remove }
        state.presented = next
    }

    func beginSave(_ value: [Element]) -> [String: Change] {
        state.withLock { state in
            if !state.prepared { diff(value, into: &state) }
            state.prepared = false
            defer { state.pending = [:] }
            return state.pending
        }
    }

    /// Ends a save; the changes of a failed one are pending again (unless changed since).
    func finishSave(failed batch: [String: Change]?) {
        guard let batch else { return }
        state.withLock { state in
            for (id, change) in batch where state.pending[id] == nil { state.pending[id] = change }
        }
    }
}
