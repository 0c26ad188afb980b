/// Errors of the Sharing layer, with messages in the user's terms: key names, counter and log
/// names, element ids and paths to the offending field, never internal storage keys.
public enum SharingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `Shared(require:)` found no stored value for the key (named as in code, e.g. `.replicated("x")`).
    case noValue(key: String)
    /// A key of the process default replica was used before `Replica.setDefault` (it binds then).
    case noDefaultReplica(key: String)
    /// The stored or received bytes are not a valid value; they are kept (see `Replica.quarantined`).
    /// `key` is what holds them: a key name, `counter visits`, `element <id> of log drinks`.
    case undecodable(key: String, reason: String)
    /// The payload was written by a newer schema than this program knows; kept and forwarded untouched.
    case newerSchema(key: String, stored: UInt16, known: UInt16)
    case continuationNeverResumed(String)
    /// An increment would take this replica's part of the counter beyond `Int.max` (or below `Int.min`).
    case counterOverflow(name: String)
    /// The encoded value is larger than the replica accepts (`WireLimits.maxPayloadBytes`).
    case valueTooLarge(key: String, size: Int, limit: Int)
    /// One element of a log save was refused (too large, a repeated id, newer data stored); the
    /// other changes of that save were written.
    case elementNotSaved(log: String, id: String, reason: String)
    /// A value could not be encoded for storage.
    case unencodable(key: String, reason: String)
    /// A register's name starts with U+001F, which is reserved for the entries of counters and logs.
    case reservedKey(key: String)

    public var description: String {
        switch self {
        case .noValue(let key): "no value is stored for \(key)"
        case .noDefaultReplica(let key):
            "\(key) has no replica yet: call Replica.setDefault(_:) (the value binds to it then) or pass on: replica"
        case .undecodable(let key, let reason): "the value of \(key) cannot be decoded (kept aside): \(reason)"
        case .newerSchema(let key, let stored, let known):
            "the value of \(key) has schema version \(stored), newer than \(known) known here; it is kept and forwarded untouched"
        case .continuationNeverResumed(let what): "\(what) was never resumed"
        case .counterOverflow(let name): "counter \(name) would overflow"
        case .valueTooLarge(let key, let size, let limit):
            "the value of \(key) is \(size) bytes, over the limit of \(limit) bytes; it was not saved"
        case .elementNotSaved(let log, let id, let reason):
            "element \(id) of log \(log) was not saved: \(reason); the log's other changes were saved"
        case .unencodable(let key, let reason): "the value of \(key) cannot be encoded: \(reason)"
        case .reservedKey(let key): "\(key) starts with U+001F, which is reserved for counters and logs: choose another name"
        }
    }
}
