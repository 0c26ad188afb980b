import Synchronization

extension Replica {
    private static let defaultReplica = Mutex<Replica?>(nil)

    /// The replica that `.replicated("name")` uses when no `on:` is given.
    public static var `default`: Replica? { defaultReplica.withLock { $0 } }

    /// An entry of a shared key's family (a counter slot, a log element) that could not be read:
    /// shown as a load error of `subject`, and kept aside unless it is newer-schema data, which
    /// stays in place untouched for the nodes that understand it.
    nonisolated func reportUnreadable(_ entry: Entry, of subject: String, error: SharingError) {
        let isNewer = if case .newerSchema = error { true } else { false }
        Task {
            if !isNewer { try? await quarantine(entry, reason: error.description) }
            await reportLoadError(subject, message: error.description)
        }
    }

    /// Makes `replica` the process default for `.replicated`, `.counter` and `.log` keys.
    public static func setDefault(_ replica: Replica?) {
        defaultReplica.withLock { $0 = replica }
    }
}
