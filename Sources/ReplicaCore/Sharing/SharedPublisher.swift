#if canImport(Combine)
import Combine

extension Shared {
    /// The current value, then every change (local or remote). Do not change the same state
    /// from a subscriber: that would loop.
    public var publisher: some Publisher<Value, Never> { reference.publisher }
}

extension SharedReader {
    /// The current value, then every change (local or remote).
    public var publisher: some Publisher<Value, Never> { reference.publisher }
}
#endif
