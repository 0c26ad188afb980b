/// Errors from the replica's public API, each with a message fit for a one-line CLI error.
public enum ReplicaError: Error, Equatable, Sendable, CustomStringConvertible {
    case shutDown
    case invalidKey(String)
    case valueTooLarge(size: Int, limit: Int)
    /// The write could not be made durable (read-only or full disk, ...). Nothing was published.
    case saveFailed(key: String, reason: String)

    public var description: String {
        switch self {
        case .shutDown: "the replica has shut down"
        case .invalidKey(let reason): "invalid key: \(reason)"
        case .valueTooLarge(let size, let limit): "value of \(size) bytes exceeds the limit of \(limit) bytes"
        case .saveFailed(let key, let reason): "could not save \(key): \(reason)"
        }
    }
}
