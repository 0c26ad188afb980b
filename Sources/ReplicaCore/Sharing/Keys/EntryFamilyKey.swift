import Foundation
import Synchronization

/// The key behind `.counter("name")` and `.log("name", ...)`: a value stored as a family of
/// entries (see `EntryFamily`), saved as deltas so that concurrent changes on different nodes
/// all survive. One generic key does the loading, subscribing, saving and problem reporting for
/// every family; the family does the arithmetic.
///
/// The key keeps books (`FamilyBooks`): the parts stored, the local edits not yet written
/// (`pending`) or being written (`inflight`), and what the value it last showed was made of.
/// A save diffs the live value against that, under the `Shared` reference's lock; a change in
/// storage is laid over the live value under the same lock (`SharedSubscriber.modify`), so a
/// remote change that arrives while a local delta waits or is being saved is counted once, and
/// the local delta too. While a save is in flight, changes of the entries it writes are held
/// until it ends (the save's own commit among them).
public final class EntryFamilyKey<Family: EntryFamily>: SharedKey, CustomStringConvertible {
    public typealias Value = Family.Value

    /// Equal for keys of the same family name on the same replica (keys of the process default
    /// share one state, whichever replica is the default).
    public struct ID: Hashable, Sendable {
        let prefix: String
        let replica: ObjectIdentifier?
    }

    public let family: Family
    let binding: ReplicaBinding
    private let books: Mutex<FamilyBooks<Family>>

    init(_ family: Family, on replica: Replica?) {
        self.family = family
        binding = ReplicaBinding(replica)
        books = Mutex(FamilyBooks(family: family))
    }

    public var id: ID { ID(prefix: family.prefix, replica: binding.identity) }
    public var description: String { family.keyDescription }

    // MARK: Load and subscribe

    public func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) {
        guard let replica = binding.replica else {
            // The first load of a key waiting for a default replica: the family's empty value (a
            // counter's 0, a log's []), never the initial value given to `@Shared`, so that what
            // is changed before binding is a delta from empty. The subscription reports the wait.
            if books.withLock({ $0.subscriber == nil && $0.replica == nil }) {
                return continuation.resume(returning: books.withLock { $0.value })
            }
            return continuation.resume(throwing: SharingError.noDefaultReplica(key: description))
        }
        let entries: [Entry]
        do {
            entries = try replica.reader.entries(prefix: family.prefix)
        } catch {
            return continuation.resume(throwing: error)
        }
        if let subscriber = books.withLock({ $0.subscriber }) {
            // An explicit reload of a live value: bring it up to date like remote changes.
            absorb(entries, from: replica, subscriber: subscriber)
            if let problem = books.withLock({ $0.firstProblem }) { return continuation.resume(throwing: problem) }
            return continuation.resumeReturningInitialValue()  // keeps the (updated) value
        }
        let (value, effects) = books.withLock { books in
            books.start(on: replica)
            let effects = entries.flatMap { books.absorb($0) }
            return (books.value, effects)
        }
        report(effects, on: replica, subscriber: nil)
        continuation.resume(returning: value)
    }

    public func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription {
        books.withLock { $0.subscriber = subscriber }
        // Waiting for a default replica: said at once, as a register's load says it (the follow
        // task says it too, when it first runs, which code reading `loadError` once missed).
        if binding.replica == nil { subscriber.yield(throwing: SharingError.noDefaultReplica(key: description)) }
        let following = binding.follow(
            prefix: family.prefix, key: description, subscriber: subscriber,
            bind: { [self] replica in
                books.withLock { $0.rebase(on: replica) }
                settle(subscriber)
            },
            catchUp: { [self] replica in
                absorb(try replica.reader.entries(prefix: family.prefix), from: replica, subscriber: subscriber)
                guard let problem = books.withLock({ $0.firstProblem }) else { return true }
                subscriber.yield(throwing: problem)
                return false
            },
            apply: { [self] replica, change in absorb([change.entry], from: replica, subscriber: subscriber) })
        return SharedSubscription { [self] in
            following.cancel()
            books.withLock { $0.subscriber = nil }
        }
    }

    private func absorb(_ entries: [Entry], from replica: Replica, subscriber: SharedSubscriber<Value>) {
        let effects = books.withLock { books in entries.flatMap { books.absorb($0) } }
        settle(subscriber)
        report(effects, on: replica, subscriber: subscriber)
    }

    /// Lays the changes the books owe the live value over it, under the reference's lock.
    private func settle(_ subscriber: SharedSubscriber<Value>) {
        guard books.withLock({ !$0.owed.isEmpty }) else { return }
        subscriber.modify { value in books.withLock { $0.settle(&value) } }
    }

    private func report(_ effects: [FamilyBooks<Family>.Effect], on replica: Replica, subscriber: SharedSubscriber<Value>?) {
        for effect in effects {
            switch effect {
            case .unreadable(let entry, let error):
                subscriber?.yield(throwing: error)
                replica.reportUnreadable(entry, of: family.subject(ofEntry: entry.key), error: error)
            case .readable(let subject):
                replica.reportReadable(subject)
            case .allReadable:
                subscriber?.yieldErrorCleared()
            }
        }
    }

    // MARK: Save

    public func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) {
        guard let replica = binding.replica else {
            return continuation.resume(throwing: SharingError.noDefaultReplica(key: description))
        }
        let edits = plan(value, on: replica)
        guard !edits.isEmpty else {
            return finishSave(.success(FamilyWrite(committed: [])), on: replica, continuation: continuation)
        }
        Task {
            do {
                finishSave(.success(try await family.write(edits, to: replica)), on: replica, continuation: continuation)
            } catch {
                finishSave(.failure(error), on: replica, continuation: continuation)
            }
        }
    }

    /// The edits of this save, diffed against the live value under the reference's lock (after
    /// laying over it whatever storage changes it is still owed), or against `value` if there is
    /// no live value.
    private func plan(_ value: Value, on replica: Replica) -> [String: Family.Edit] {
        var edits: [String: Family.Edit]?
        if let subscriber = books.withLock({ $0.subscriber }) {
            subscriber.read { live in
                edits = books.withLock { books in books.owed.isEmpty ? books.plan(live, on: replica) : nil }
            }
            if edits == nil {
                subscriber.modify { live in
                    edits = books.withLock { books in
                        books.settle(&live)
                        return books.plan(live, on: replica)
                    }
                }
            }
        }
        return edits ?? books.withLock { $0.plan(value, on: replica) }
    }

    private func finishSave(_ result: Result<FamilyWrite, any Error>, on replica: Replica, continuation: SaveContinuation) {
        let (effects, refusals, subscriber) = books.withLock { books in
            let effects = books.finishSave(result, on: replica)
            return (effects, books.refusals, books.subscriber)
        }
        if let subscriber {
            settle(subscriber)
            report(effects, on: replica, subscriber: subscriber)
            // Elements added where the caller put them take their place in the order now.
            var arranged = true
            subscriber.read { arranged = family.isArranged($0) }
            if !arranged { subscriber.modify { family.arrange(&$0) } }
        }
        // Refused changes are listed in the replica's status until a save makes them.
        var refused = Dictionary(refusals.map { (family.subject(ofEntry: $0.key), $0.value.description) }, uniquingKeysWith: { a, _ in a })
        if case .failure(let error as SharingError) = result { refused[family.subject] = error.description }
        let cleared = books.withLock { books in
            defer { books.reportedRefusals = Set(refused.keys) }
            return books.reportedRefusals.subtracting(refused.keys)
        }
        for subject in cleared { replica.decideRefusedSave(subject, message: nil) }
        for (subject, message) in refused { replica.decideRefusedSave(subject, message: message) }
        switch result {
        case .failure(let error):
            continuation.resume(throwing: error)
        case .success:
            if let first = refusals.min(by: { $0.key < $1.key }) {
                continuation.resume(throwing: first.value)
            } else {
                continuation.resume()
            }
        }
    }
}

/// The bookkeeping of one `EntryFamilyKey`, behind its lock.
///
/// What the key shows for an entry (`shown`) is its stored part with the local edits laid over
/// it: the one being written, then the one waiting; a change that cannot be saved at all (a
/// repeated log id) shows as it is in the value. Every change of `shown` outside a save's diff
/// is owed to the live value (`owed`) and laid over it under the reference's lock.
struct FamilyBooks<Family: EntryFamily> {
    struct Stored {
        var version: Version
        /// The last readable part (nil: removed, or never readable).
        var part: Family.Part?
    }

    struct Refusal {
        var shows: Family.Part?
        var error: SharingError
    }

    enum Effect: Sendable {
        case unreadable(Entry, SharingError)
        /// No entry of this subject is unreadable any more.
        case readable(subject: String)
        /// Every entry is readable.
        case allReadable
    }

    let family: Family
    /// The replica the stored parts come from.
    var replica: ObjectIdentifier?
    var stored: [String: Stored] = [:]
    var pending: [String: Family.Edit] = [:]
    /// The edits of the save in flight (nil: none).
    var inflight: [String: Family.Edit]?
    /// Changes of the value that the last save could not make, by entry key.
    var refused: [String: Refusal] = [:]
    /// Entries received for keys the save in flight writes, settled when it ends.
    var held: [String: Entry] = [:]
    var problems: [String: SharingError] = [:]
    var owed: [PartChange<Family.Part>] = []
    var subscriber: SharedSubscriber<Family.Value>?
    /// Subjects whose refused save is listed in the replica's status.
    var reportedRefusals: Set<String> = []

    init(family: Family) { self.family = family }

    var refusals: [String: SharingError] { refused.mapValues(\.error) }
    var firstProblem: SharingError? { problems.min { $0.key < $1.key }?.value }

    private var keys: Set<String> {
        var keys = Set(stored.keys).union(pending.keys).union(refused.keys)
        if let inflight { keys.formUnion(inflight.keys) }
        return keys
    }

    /// The stored part with the local edits laid over it.
    func base(_ key: String) -> Family.Part? {
        var part = stored[key]?.part
        if let edit = inflight?[key] { part = family.applying(edit, to: part) }
        if let edit = pending[key] { part = family.applying(edit, to: part) }
        return part
    }

    func shown(_ key: String) -> Family.Part? {
        if let refusal = refused[key] { return refusal.shows }
        return base(key)
    }

    /// The value made of what is shown.
    var value: Family.Value {
        family.value(of: Dictionary(uniqueKeysWithValues: keys.compactMap { key in shown(key).map { (key, $0) } }))
    }

    /// Runs `body`, and records how it changed what is shown for `keys` (the keys it touches)
    /// as owed to the live value, if there is one.
    private mutating func tracking(_ keys: some Collection<String>, _ body: (inout FamilyBooks) -> Void) {
        guard subscriber != nil else { return body(&self) }
        let before = keys.map { ($0, shown($0)) }
        body(&self)
        for (key, old) in before {
            let new = shown(key)
            if new != old { owed.append(PartChange(key: key, old: old, new: new)) }
        }
    }

    /// The first load with no live value: everything is read afresh.
    mutating func start(on replica: Replica) {
        self.replica = ObjectIdentifier(replica)
        stored = [:]
        problems = [:]
        held = [:]
    }

    /// A session on `replica` starts: if the stored parts came from another replica (a new
    /// process default), they are dropped, and the new replica's entries are absorbed next.
    mutating func rebase(on replica: Replica) {
        let id = ObjectIdentifier(replica)
        guard self.replica != id else { return }
        if self.replica != nil {
            tracking(keys) { books in
                books.stored = [:]
                books.problems = [:]
                books.held = [:]
            }
        }
        self.replica = id
    }

    /// An entry of the family from the store or a change.
    mutating func absorb(_ entry: Entry) -> [Effect] {
        let key = entry.key
        guard key.hasKeyPrefix(family.prefix) else { return [] }
        if let seen = stored[key], entry.version <= seen.version { return [] }
        if inflight?[key] != nil {
            if held[key].map({ entry.version > $0.version }) ?? true { held[key] = entry }
            return []
        }
        let part: Family.Part?
        do {
            part = try family.part(of: entry)
        } catch {
            stored[key] = Stored(version: entry.version, part: stored[key]?.part)  // the last readable part stays
            problems[key] = error
            return [.unreadable(entry, error)]
        }
        tracking([key]) { $0.stored[key] = Stored(version: entry.version, part: part) }
        guard problems.removeValue(forKey: key) != nil else { return [] }
        var effects: [Effect] = []
        let subject = family.subject(ofEntry: key)
        if !problems.keys.contains(where: { family.subject(ofEntry: $0) == subject }) { effects.append(.readable(subject: subject)) }
        if problems.isEmpty { effects.append(.allReadable) }
        return effects
    }

    /// Under the reference's lock: lays what is owed over the live value.
    mutating func settle(_ value: inout Family.Value) {
        guard !owed.isEmpty else { return }
        family.apply(owed, to: &value)
        owed = []
    }

    /// Under the reference's lock, with nothing owed: the edits that make what is shown equal
    /// `value`. They become the save in flight (with any edits a failed save left pending).
    mutating func plan(_ value: Family.Value, on replica: Replica) -> [String: Family.Edit] {
        let shownWithoutRefusals = Dictionary(uniqueKeysWithValues: keys.compactMap { key in base(key).map { (key, $0) } })
        let planned = family.edits(from: shownWithoutRefusals, to: value, on: replica)
        // Refusals are decided afresh by every save (the value may have been fixed since).
        refused = planned.refused.mapValues { Refusal(shows: $0.shows, error: $0.error) }
        for (key, edit) in planned.edits {
            pending[key] = pending[key].map { family.combining($0, edit) } ?? edit
        }
        let edits = pending
        pending = [:]
        inflight = (inflight ?? [:]).merging(edits) { family.combining($0, $1) }
        return edits
    }

    /// Ends the save in flight, made on `replica`, then settles the entries held meanwhile.
    mutating func finishSave(_ result: Result<FamilyWrite, any Error>, on replica: Replica) -> [Effect] {
        let edits = inflight ?? [:]
        switch result {
        case .success where self.replica.map({ $0 != ObjectIdentifier(replica) }) ?? false:
            // The key moved to another replica (a new process default) while the save was in
            // flight: what it committed is the old replica's, and recorded here it showed the
            // old replica's slot or elements in the new one's value (and a later save wrote
            // them there). Cleared under `tracking`: the live value gives back what the save
            // added, which the old replica holds, or the next save wrote it to the new one too.
            tracking(Set(edits.keys)) { $0.inflight = nil }
        case .success(let written):
            let keys = Set(edits.keys).union(written.committed.map(\.key))
            tracking(keys) { books in
                for entry in written.committed where books.stored[entry.key].map({ entry.version > $0.version }) ?? true {
                    let part: Family.Part?
                    do {
                        part = try books.family.part(of: entry)
                    } catch {
                        part = books.stored[entry.key]?.part  // our own write: readable unless the family changed meanwhile
                    }
                    books.stored[entry.key] = Stored(version: entry.version, part: part)
                }
                for (key, error) in written.refused {
                    let shows = edits[key].flatMap { books.family.applying($0, to: books.stored[key]?.part) }
                    books.refused[key] = Refusal(shows: shows, error: error)
                }
                books.inflight = nil
            }
        case .failure:
            // Nothing was written: the edits wait for the next save (what is shown is unchanged).
            for (key, edit) in edits {
                pending[key] = pending[key].map { family.combining(edit, $0) } ?? edit
            }
            inflight = nil
        }
        let held = self.held.values.sorted { $0.version < $1.version }
        self.held = [:]
        return held.flatMap { absorb($0) }
    }
}
