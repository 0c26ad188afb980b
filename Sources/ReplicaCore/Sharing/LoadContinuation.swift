/// How a key's `load` hands back its result, exactly once.
public struct LoadContinuation<Value: Sendable>: Sendable {
    /// `.some(value)` loaded, `.none` use the initial value, or an error.
    typealias Outcome = Result<Value?, any Error>

    let box: ResumeOnce<Outcome>

    init(_ what: String, callback: @escaping @Sendable (Outcome) -> Void) {
        box = ResumeOnce(what, fallback: { .failure(SharingError.continuationNeverResumed(what)) }, callback: callback)
    }

    public func resume(returning value: Value) { box.resume(.success(value)) }
    /// Storage has no value: keep (or fall back to) the initial value.
    public func resumeReturningInitialValue() { box.resume(.success(nil)) }
    public func resume(throwing error: any Error) { box.resume(.failure(error)) }
    public func resume(with result: Result<Value, any Error>) { box.resume(result.map { $0 }) }
}

/// How a key's `save` reports that the value is durable (or why it is not), exactly once.
public struct SaveContinuation: Sendable {
    let box: ResumeOnce<Result<Void, any Error>>

    init(_ what: String, callback: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        box = ResumeOnce(what, fallback: { .failure(SharingError.continuationNeverResumed(what)) }, callback: callback)
    }

    public func resume() { box.resume(.success(())) }
    public func resume(throwing error: any Error) { box.resume(.failure(error)) }
    public func resume(with result: Result<Void, any Error>) { box.resume(result) }
}
