/// Who waits for a local write: an `async` caller (a continuation) or a caller that submitted it
/// without awaiting (a handler run on the replica's loop thread). Either is completed exactly
/// once, by the commit that takes the write or by the refusal or shutdown that drops it.
enum WriteCompletion: Sendable {
    case continuation(CheckedContinuation<[Entry], any Error>)
    case handler(@Sendable (Result<[Entry], any Error>) -> Void)

    func resume(returning entries: [Entry]) {
        switch self {
        case .continuation(let continuation): continuation.resume(returning: entries)
        case .handler(let handler): handler(.success(entries))
        }
    }

    func resume(throwing error: any Error) {
        switch self {
        case .continuation(let continuation): continuation.resume(throwing: error)
        case .handler(let handler): handler(.failure(error))
        }
    }
}
