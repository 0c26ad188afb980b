import Foundation
import Synchronization

extension SharedReaderKey {
    /// A last-writer-wins register of any `Codable` value, replicated by `replica` (or by the
    /// process default set with `Replica.setDefault`). Concurrent writes on different nodes:
    /// the highest version wins everywhere, the other is superseded (use `.counter` or `.log`
    /// for values that must merge).
    public static func replicated<Value: Codable & Sendable>(_ name: String, on replica: Replica? = nil) -> Self
    where Self == ReplicatedKey<Value> {
        ReplicatedKey(name, on: replica)
    }
}

/// The key behind `.replicated("name")`: one replicated entry holding the JSON of the value.
///
/// The key keeps what it has shown (the newest version delivered or saved), so remote changes
/// are applied in version order, and its own saves never come back as changes. While a save is
/// in flight, changes of the entry are held until it ends: one older than the save is dropped
/// (the save wins everywhere), a newer one is shown, so the value shown is the value stored.
///
/// A save of the value shown writes nothing: under last-writer-wins a new version of the same
/// value would replace a real change made meanwhile on another node (a `withLock` that only
/// reads, a `save()` when the app goes to the background).
public final class ReplicatedKey<Value: Codable & Sendable>: SharedKey, CustomStringConvertible {
    /// Equal for keys of the same name on the same replica (keys of the process default share
    /// one state, whichever replica is the default).
    public struct ID: Hashable, Sendable {
        let name: String
        let replica: ObjectIdentifier?
    }

    public let name: String
    let binding: ReplicaBinding
    private let codec = ReplicatedValueCodec<Value>()
    private let books = Mutex(Books())

    private struct Books {
        /// The replica `shown` refers to.
        var replica: ObjectIdentifier?
        var shown: Version?
        /// What the shown version holds: a save of the same is not written again.
        var shownContent: Content?
        var saving = false
        /// The newest entry received while saving.
        var held: Entry?
        /// A load error of this key is listed in the replica's status.
        var reportedLoadError = false
        /// A refused save of this key is listed in the replica's status.
        var reportedRefusal = false
        var subscriber: SharedSubscriber<Value>?
    }

    struct Content: Equatable {
        var payload: [UInt8]?
        var schema: UInt16
    }

    init(_ name: String, on replica: Replica?) {
        self.name = name
        binding = ReplicaBinding(replica)
    }

    public var id: ID { ID(name: name, replica: binding.identity) }
    public var description: String { ".replicated(\(String(reflecting: name)))" }

    // MARK: Load and subscribe

    public func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) {
        guard let replica = binding.replica else {
            return continuation.resume(throwing: SharingError.noDefaultReplica(key: description))
        }
        guard !name.hasPrefix(FamilyKey.marker) else { return continuation.resume(throwing: reservedName) }
        var entry: Entry?
        do {
            entry = try replica.reader.entry(for: name)
            if let read = entry, isOlderThanShown(read, on: replica) {
                // A newer version was committed and shown since this read: read it again, so
                // that the load does not put the older value back over it.
                entry = try replica.reader.entry(for: name)
            }
        } catch {
            return continuation.resume(throwing: error)
        }
        if let entry { _ = advance(to: entry, on: replica) }
        guard let entry, !entry.isTombstone else { return continuation.resumeReturningInitialValue() }
        continuation.resume(with: decode(entry, replica: replica))
    }

    public func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription {
        // A reserved name follows nothing: a counter slot there must not show (the load said why).
        guard !name.hasPrefix(FamilyKey.marker) else { return SharedSubscription {} }
        books.withLock { $0.subscriber = subscriber }
        let name = name
        let following = binding.follow(
            prefix: name, key: description, subscriber: subscriber,
            catchUp: { [self] replica in
                guard let entry = try replica.reader.entry(for: name) else {
                    // Bound to another default than the one shown: it holds no value, so the
                    // initial value shows (as for a key new to it), unless a save of changes
                    // made before is about to store one.
                    let moved = books.withLock { books in
                        guard books.replica.map({ $0 != ObjectIdentifier(replica) }) ?? false, !books.saving else { return false }
                        books.replica = ObjectIdentifier(replica)
                        (books.shown, books.shownContent) = (nil, nil)
                        return true
                    }
                    if moved { subscriber.yieldReturningInitialValue() }
                    return true
                }
                receive(entry, on: replica, subscriber: subscriber)
                return false  // the value delivered says how it is
            },
            apply: { [self] replica, change in
                if change.entry.key == name { receive(change.entry, on: replica, subscriber: subscriber) }
            })
        return SharedSubscription { [self] in
            following.cancel()
            books.withLock { $0.subscriber = nil }
        }
    }

    /// Records `entry` as shown if it is newer than anything shown on `replica`.
    private func advance(to entry: Entry, on replica: Replica) -> Bool {
        books.withLock { books in
            if books.replica != ObjectIdentifier(replica) {  // a new default: nothing shown from it yet
                books.replica = ObjectIdentifier(replica)
                (books.shown, books.shownContent) = (nil, nil)
            }
            guard books.shown.map({ entry.version > $0 }) ?? true else { return false }
            books.shown = entry.version
            books.shownContent = Content(payload: entry.payload, schema: entry.schema)
            return true
        }
    }

    /// Whether a newer version than `entry`'s was shown from `replica`.
    private func isOlderThanShown(_ entry: Entry, on replica: Replica) -> Bool {
        books.withLock { books in
            books.replica == ObjectIdentifier(replica) && books.shown.map { entry.version < $0 } ?? false
        }
    }

    private func receive(_ entry: Entry, on replica: Replica, subscriber: SharedSubscriber<Value>) {
        let held = books.withLock { books in
            guard books.saving else { return false }
            if books.held.map({ entry.version > $0.version }) ?? true { books.held = entry }
            return true
        }
        guard !held, advance(to: entry, on: replica) else { return }
        var delivered = entry
        while true {
            show(delivered, on: replica, subscriber: subscriber)
            // A save that ended between `advance` and this yield (it began after `advance`, so
            // nothing held this entry for it) recorded a newer version, whose value the yield
            // just replaced with an older one: show the newest again, until none came meanwhile.
            // (Under load, a register showed a value older than the one stored, for good.)
            guard let newer = books.withLock({ books -> Entry? in
                guard books.replica == ObjectIdentifier(replica), let version = books.shown, version > delivered.version,
                      let content = books.shownContent else { return nil }
                return Entry(key: name, version: version, schema: content.schema, payload: content.payload)
            }) else { return }
            delivered = newer
        }
    }

    private func show(_ entry: Entry, on replica: Replica, subscriber: SharedSubscriber<Value>) {
        if entry.isTombstone {
            clearLoadError(on: replica)
            subscriber.yieldReturningInitialValue()
        } else {
            subscriber.yield(with: decode(entry, replica: replica).map { $0 })
        }
    }

    /// Decodes an entry; an undecodable one is kept aside and reported, never dropped.
    private func decode(_ entry: Entry, replica: Replica) -> Result<Value, any Error> {
        do throws(SharingError) {
            let value = try codec.decode(entry.payload ?? [], schema: entry.schema, key: description)
            clearLoadError(on: replica)
            return .success(value)
        } catch {
            books.withLock { $0.reportedLoadError = true }
            replica.reportUnreadable(entry, of: name, error: error)
            return .failure(error)
        }
    }

    private func clearLoadError(on replica: Replica) {
        guard books.withLock({ books in defer { books.reportedLoadError = false }; return books.reportedLoadError }) else { return }
        let name = name
        replica.reportReadable(name)
    }

    /// Keys starting with U+001F hold counter slots and log elements: a register there could
    /// pose as one (a forged slot adds to a counter).
    private var reservedName: SharingError { .reservedKey(key: description) }

    // MARK: Save

    public func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) {
        guard let replica = binding.replica else {
            return continuation.resume(throwing: SharingError.noDefaultReplica(key: description))
        }
        let payload: [UInt8]
        do {
            guard !name.hasPrefix(FamilyKey.marker) else { throw reservedName }
            payload = try codec.encode(value, key: description)
            let limit = replica.configuration.limits.maxPayloadBytes
            guard payload.count <= limit else { throw SharingError.valueTooLarge(key: description, size: payload.count, limit: limit) }
        } catch {
            return finishSave(.failure(error), on: replica, continuation: continuation)
        }
        let content = Content(payload: payload, schema: codec.schema)
        let unchanged = books.withLock { books in
            guard books.replica == ObjectIdentifier(replica), books.shownContent == content else {
                books.saving = true
                return false
            }
            return true
        }
        if unchanged { return finishSave(.success(nil), on: replica, continuation: continuation) }
        Task {
            do {
                // A value written by a newer schema is never overwritten by this program.
                let entry = try await replica.write(
                    [Replica.WriteRequest(key: name, payload: payload, schema: codec.schema)],
                    refusingNewerSchemaThan: codec.schema)[0]
                finishSave(.success(entry), on: replica, continuation: continuation)
            } catch SharingError.newerSchema(_, let stored, let known) {
                finishSave(.failure(SharingError.newerSchema(key: description, stored: stored, known: known)), on: replica, continuation: continuation)
            } catch {
                finishSave(.failure(error), on: replica, continuation: continuation)
            }
        }
    }

    /// Ends a save: `.success(nil)` when nothing was written (the value shown was saved again).
    private func finishSave(_ result: Result<Entry?, any Error>, on replica: Replica, continuation: SaveContinuation) {
        let (held, subscriber) = books.withLock { books -> (Entry?, SharedSubscriber<Value>?) in
            books.saving = false
            defer { books.held = nil }
            return (books.held, books.subscriber)
        }
        // The value shown is now the one just saved, which reads: a load error shown for an
        // earlier value (or "no replica yet", for a save made as the key bound) is over. An entry
        // held meanwhile, newer and unreadable, sets it again below.
        if case .success(let entry?) = result, advance(to: entry, on: replica) {
            clearLoadError(on: replica)
            subscriber?.yieldErrorCleared()
        }
        // Held changes go out before the save's caller resumes, while the reference still knows
        // whether newer local changes wait for the next save (then it keeps them).
        if let held, let subscriber { receive(held, on: replica, subscriber: subscriber) }
        let name = name
        switch result {
        case .success:
            if books.withLock({ books in defer { books.reportedRefusal = false }; return books.reportedRefusal }) {
                replica.decideRefusedSave(name, message: nil)
            }
            continuation.resume()
        case .failure(let error):
            if let refusal = error as? SharingError {
                books.withLock { $0.reportedRefusal = true }
                replica.decideRefusedSave(name, message: refusal.description)
            }
            continuation.resume(throwing: error)
        }
    }
}
