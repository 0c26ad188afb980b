extension SharedReaderKey {
    /// A key with a default value, so that `@Shared(.count) var count` needs no `= 0`:
    ///
    /// ```swift
    /// extension SharedReaderKey where Self == ReplicatedKey<Int>.Default {
    ///     static var count: Self { Self[.replicated("count"), default: 0] }
    /// }
    /// ```
    public typealias Default = SharedKeyDefault<Self>
}

/// A key and the value to use when its storage has none (`Key.Default`, as in Sharing).
public struct SharedKeyDefault<Base: SharedReaderKey>: SharedReaderKey, CustomStringConvertible {
    public let base: Base
    let defaultValue: @Sendable () -> Base.Value

    public static subscript(_ key: Base, default value: @autoclosure @escaping @Sendable () -> Base.Value) -> Self {
        Self(base: key, defaultValue: value)
    }

    public var id: Base.ID { base.id }

    /// The default (evaluated each time it is asked for, so only when needed).
    public var initialValue: Base.Value { defaultValue() }

    public func load(context: LoadContext<Base.Value>, continuation: LoadContinuation<Base.Value>) {
        base.load(context: context, continuation: continuation)
    }

    public func subscribe(context: LoadContext<Base.Value>, subscriber: SharedSubscriber<Base.Value>) -> SharedSubscription {
        base.subscribe(context: context, subscriber: subscriber)
    }

    public var description: String { "\(base.readable) with a default" }
}

extension SharedKeyDefault: SharedKey where Base: SharedKey {
    public func save(_ value: Base.Value, context: SaveContext, continuation: SaveContinuation) {
        base.save(value, context: context, continuation: continuation)
    }
}
