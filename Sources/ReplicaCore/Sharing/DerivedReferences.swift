import Foundation
#if canImport(Combine)
import Combine
#endif

/// `$settings.theme`: a writable member of another reference's value. Reads and writes go
/// through the root, so a write saves (and replicates) the whole root value.
final class MemberReference<Root: Sendable, Member: Sendable>: MutableReference {
    let base: any MutableReference<Root>
    let keyPath: WritableKeyPath<Root, Member> & Sendable

    init(base: any MutableReference<Root>, keyPath: WritableKeyPath<Root, Member> & Sendable) {
        self.base = base
        self.keyPath = keyPath
    }

    var value: Member { base.value[keyPath: keyPath] }
    var isLoading: Bool { base.isLoading }
    var loadError: (any Error)? { base.loadError }
    var saveError: (any Error)? { base.saveError }
    func load() async throws { try await base.load() }
    func save() async throws { try await base.save() }
    func touch() { base.touch() }

    func withLock<R>(_ body: (inout Member) throws -> R) rethrows -> R {
        try base.withLock { try body(&$0[keyPath: keyPath]) }
    }

    func observe(_ deliver: @escaping @Sendable (Member) -> Void, end: @escaping @Sendable () -> Void) -> SharedSubscription {
        let keyPath = keyPath
        return base.observe({ deliver($0[keyPath: keyPath]) }, end: end)
    }

    #if canImport(Combine)
    var publisher: AnyPublisher<Member, Never> {
        let keyPath = keyPath
        return base.publisher.map { $0[keyPath: keyPath] }.eraseToAnyPublisher()
    }
    #endif

    var description: String { "\(base.description)[dynamicMember: \(keyPath)]" }
}

/// `$items.count` (a read-only member) and `$value.read { ... }`: a value computed from another
/// reference's value, read-only.
final class ReadReference<Root: Sendable, Member: Sendable>: Reference {
    let base: any Reference<Root>
    let transform: @Sendable (Root) -> Member
    let label: String

    init(base: any Reference<Root>, label: String, transform: @escaping @Sendable (Root) -> Member) {
        self.base = base
        self.label = label
        self.transform = transform
    }

    var value: Member { transform(base.value) }
    var isLoading: Bool { base.isLoading }
    var loadError: (any Error)? { base.loadError }
    func load() async throws { try await base.load() }
    func touch() { base.touch() }

    func observe(_ deliver: @escaping @Sendable (Member) -> Void, end: @escaping @Sendable () -> Void) -> SharedSubscription {
        let transform = transform
        return base.observe({ deliver(transform($0)) }, end: end)
    }

    #if canImport(Combine)
    var publisher: AnyPublisher<Member, Never> {
        base.publisher.map(transform).eraseToAnyPublisher()
    }
    #endif

    var description: String { "\(base.description)\(label)" }
}

/// `Shared($optional)`: the wrapped value of an optional. When the optional becomes nil the
/// last wrapped value is kept (and writes change only that copy), as in Sharing.
final class UnwrappedReference<Wrapped: Sendable, Base: Reference<Wrapped?>>: Reference, @unchecked Sendable {
    let base: Base
    private let lock = NSLock()
    private var last: Wrapped  // guarded by lock

    init(base: Base, initialValue: Wrapped) {
        self.base = base
        last = initialValue
    }

    private func withLast<R>(_ body: (inout Wrapped) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&last)
    }

    var value: Wrapped {
        guard let wrapped = base.value else { return withLast { $0 } }
        withLast { $0 = wrapped }
        return wrapped
    }

    var isLoading: Bool { base.isLoading }
    var loadError: (any Error)? { base.loadError }
    func load() async throws { try await base.load() }
    func touch() { base.touch() }

    func observe(_ deliver: @escaping @Sendable (Wrapped) -> Void, end: @escaping @Sendable () -> Void) -> SharedSubscription {
        base.observe({ if let wrapped = $0 { deliver(wrapped) } }, end: end)
    }

    #if canImport(Combine)
    var publisher: AnyPublisher<Wrapped, Never> {
        base.publisher.compactMap { $0 }.eraseToAnyPublisher()
    }
    #endif

    var description: String { "\(base.description)!" }
}

extension UnwrappedReference: MutableReference where Base: MutableReference {
    var saveError: (any Error)? { base.saveError }
    func save() async throws { try await base.save() }

    func withLock<R>(_ body: (inout Wrapped) throws -> R) rethrows -> R {
        try base.withLock { optional in
            guard var wrapped = optional else { return try withLast(body) }
            defer {
                optional = wrapped
                withLast { [wrapped] in $0 = wrapped }
            }
            return try body(&wrapped)
        }
    }
}
