import Synchronization

extension SharedReaderKey {
    /// A value shared within this process only, for tests and previews. It lives as long as
    /// the process, like Sharing's `.inMemory`.
    public static func inMemory<Value: Sendable>(_ name: String) -> Self where Self == InMemoryKey<Value> {
        InMemoryKey(name: name)
    }
}

/// The key behind `.inMemory("name")`. Every `Shared` of one name (and value type) holds the
/// same reference, so there is nothing to subscribe to.
public struct InMemoryKey<Value: Sendable>: SharedKey, Hashable, CustomStringConvertible {
    public let name: String

    public var id: String { name }
    public var description: String { ".inMemory(\(String(reflecting: name)))" }

    public func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) {
        if let value = InMemoryStorage.values.withLock({ $0[name] }) as? Value {
            continuation.resume(returning: value)
        } else {
            continuation.resumeReturningInitialValue()
        }
    }

    public func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>) -> SharedSubscription {
        SharedSubscription {}
    }

    public func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) {
        InMemoryStorage.values.withLock { $0[name] = value }
        continuation.resume()
    }
}

enum InMemoryStorage {
    static let values = Mutex<[String: any Sendable]>([:])
}
