/// Errors of the Sharing layer, with messages fit for a user interface.
public enum SharingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `Shared(require:)` found no stored value.
    case noValue(key: String)
    /// `.replicated("name")` without `on:` and no `Replica.setDefault`.
    case noDefaultReplica
    /// The stored or received bytes are not a valid value; they are kept (see `quarantined`).
    case undecodable(key: String, reason: String)
    /// The payload was written by a newer schema than this program knows; kept and forwarded untouched.
    case newerSchema(key: String, stored: UInt16, known: UInt16)
    case continuationNeverResumed(String)
    /// An increment would take the counter's slot beyond `Int.max` (or below `Int.min`).
    case counterOverflow(name: String)

    public var description: String {
        switch self {
        case .noValue(let key): "no value is stored for \(key)"
        case .noDefaultReplica: "no default replica: call Replica.setDefault(_:) or use .replicated(name, on: replica)"
        case .undecodable(let key, let reason): "the value of \(key) cannot be decoded (kept aside): \(reason)"
        case .newerSchema(let key, let stored, let known):
            "the value of \(key) has schema version \(stored), newer than \(known) known here; it is kept and forwarded untouched"
        case .continuationNeverResumed(let what): "\(what) was never resumed"
        case .counterOverflow(let name): "counter \(name) would overflow"
        }
    }
}
