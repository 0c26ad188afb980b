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
public struct ReplicatedKey<Value: Codable & Sendable>: SharedKey {
    public struct ID: Hashable, Sendable {
        var name: String
        var replica: ObjectIdentifier?
    }

    public let name: String
    let replica: Replica?
    let codec: ReplicatedValueCodec<Value>
    let tracker = ReplicatedKeyTracker()

    init(_ name: String, on replica: Replica?) {
        self.name = name
        self.replica = replica ?? Replica.default
        codec = ReplicatedValueCodec()
    }

    public var id: ID { ID(name: name, replica: replica.map(ObjectIdentifier.init)) }

    public func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let entry: Entry?
        do {
            entry = try replica.reader.entry(for: name)
        } catch {
            return continuation.resume(throwing: error)
        }
        guard let entry, !entry.isTombstone else { return continuation.resumeReturningInitialValue() }
        tracker.saw(entry.version)
        continuation.resume(with: decode(entry, replica: replica))
    }

    public func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription {
        guard let replica else { return SharedSubscription {} }
        let name = name
        let task = Task { [tracker] in
            let changes = await replica.changes(prefix: name)
            // Whatever was committed between the load and the subscription starting.
            if let entry = try? replica.reader.entry(for: name) { deliver(entry, origin: nil, to: subscriber, replica: replica) }
            for await change in changes where change.entry.key == name {
                if change.origin == .local && tracker.isOwnSave(change.entry.payload) { tracker.saw(change.entry.version); continue }
                deliver(change.entry, origin: change.origin, to: subscriber, replica: replica)
            }
        }
        return SharedSubscription { task.cancel() }
    }

    private func deliver(_ entry: Entry, origin: Change.Origin?, to subscriber: SharedSubscriber<Value>, replica: Replica) {
        guard tracker.advance(to: entry.version) else { return }  // not newer than what we have
        if entry.isTombstone {
            subscriber.yieldReturningInitialValue()
        } else {
            subscriber.yield(with: decode(entry, replica: replica).map { $0 })
        }
    }

    public func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) {
        guard let replica else { return continuation.resume(throwing: SharingError.noDefaultReplica) }
        let payload: [UInt8]
        do {
            payload = try codec.encode(value)
        } catch {
            return continuation.resume(throwing: error)
        }
        tracker.beginSave(payload)
        let name = name
        Task { [tracker] in
            defer { tracker.endSave(payload) }
            do {
                // A value written by a newer schema is never overwritten by this program.
                let entry = try await replica.write(
                    [Replica.WriteRequest(key: name, payload: payload, schema: codec.schema)],
                    refusingNewerSchemaThan: codec.schema)[0]
                tracker.saw(entry.version)
                continuation.resume()
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Decodes an entry; an undecodable one is kept aside and reported, never dropped.
    private func decode(_ entry: Entry, replica: Replica) -> Result<Value, any Error> {
        do {
            let value = try codec.decode(entry.payload ?? [], schema: entry.schema, key: name)
            Task { await replica.clearLoadError(name) }
            return .success(value)
        } catch {
            let message = (error as? SharingError)?.description ?? "\(error)"
            let isNewer = if case SharingError.newerSchema = error { true } else { false }
            Task {
                // Newer-schema bytes are valid, just not for us: they stay in the store as they are.
                if !isNewer { try? await replica.quarantine(entry, reason: message) }
                await replica.reportLoadError(name, message: message)
            }
            return .failure(error)
        }
    }
}

/// What one replicated key has seen and is saving, so that remote changes are applied in
/// version order and the key's own saves never come back as changes.
final class ReplicatedKeyTracker: Sendable {
    private struct State {
        var highest: Version?
        var saving: [[UInt8]] = []
    }

    private let state = Mutex(State())

    func saw(_ version: Version) {
        state.withLock { state in
            if state.highest.map({ version > $0 }) ?? true { state.highest = version }
        }
    }

    /// Records `version` and returns true if it is newer than anything seen.
    func advance(to version: Version) -> Bool {
        state.withLock { state in
            guard state.highest.map({ version > $0 }) ?? true else { return false }
            state.highest = version
            return true
        }
    }

    func beginSave(_ payload: [UInt8]) { state.withLock { $0.saving.append(payload) } }

    func endSave(_ payload: [UInt8]) {
        state.withLock { state in
            if let index = state.saving.firstIndex(of: payload) { state.saving.remove(at: index) }
        }
    }

    func isOwnSave(_ payload: [UInt8]?) -> Bool {
        guard let payload else { return false }
        return state.withLock { $0.saving.contains(payload) }
    }
}
