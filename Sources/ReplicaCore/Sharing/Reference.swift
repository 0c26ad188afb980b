import Foundation
#if canImport(Combine)
import Combine
#endif

/// What a `SharedReader` reads through: the reference of a key (`KeyReference`), or a view
/// derived from one (`DerivedReferences.swift`). Derived views read and write through their
/// root, so observation, loading and errors are the root's.
protocol Reference<Value>: AnyObject, Sendable, CustomStringConvertible {
    associatedtype Value: Sendable

    /// The current value. Reading it inside `withObservationTracking` tracks the root's value.
    var value: Value { get }
    var isLoading: Bool { get }
    var loadError: (any Error)? { get }
    func load() async throws
    /// Calls `deliver` with the current value, then with every new one, in the order the value
    /// changed, until the returned subscription is cancelled; `end` when the root goes away.
    func observe(_ deliver: @escaping @Sendable (Value) -> Void, end: @escaping @Sendable () -> Void) -> SharedSubscription
    /// Tells observers of the value that it may have changed (a `Shared` now reads another key).
    func touch()
    #if canImport(Combine)
    var publisher: AnyPublisher<Value, Never> { get }
    #endif
}

/// A reference that `Shared` can write through.
protocol MutableReference<Value>: Reference {
    var saveError: (any Error)? { get }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R
    func save() async throws
}

extension Reference {
    /// The current value, then every change: observation without Combine.
    func values() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1024))
        let observation = observe({ continuation.yield($0) }, end: { continuation.finish() })
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }
}
