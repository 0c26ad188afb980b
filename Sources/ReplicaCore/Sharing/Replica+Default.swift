import Synchronization

extension Replica {
    private static let defaultReplica = Mutex<Replica?>(nil)

    /// The replica that `.replicated("name")` uses when no `on:` is given.
    public static var `default`: Replica? { defaultReplica.withLock { $0 } }

    /// Makes `replica` the process default for `.replicated`, `.counter` and `.log` keys.
    public static func setDefault(_ replica: Replica?) {
        defaultReplica.withLock { $0 = replica }
    }
}
