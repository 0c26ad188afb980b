/// Why a start does not count as following a clean stop, so that its counter increments go to a
/// new slot (`SQLiteStore.beginRun` says why a slot must not outlive such a start). Each case
/// names what an operator can check: the log line says which one it was.
public enum UncleanStart: Equatable, Sendable, CustomStringConvertible {
    /// No `clean-stop` record: the last run did not stop cleanly (a crash, `kill -9`, an
    /// out-of-memory kill), its stop could not write the record, or a version before 0.25.0 ran
    /// the directory.
    case noRecord
    /// The record does not describe the database file as it is now: the file's change time or
    /// size differs from the one its clean stop recorded.
    case fileChanged
    /// The record describes the file, but the store lacks the stop's last commit.
    case stopCommitMissing
    /// The write-ahead log was damaged and set aside: commits in it are gone.
    case logDamaged
    /// `synchronous = OFF`: a stop is not synced, so none is recorded, and every start takes
    /// a new slot (by design: a power loss may lose any commit).
    case synchronousOff

    /// Judges a start of an existing store (a created one has no past run to doubt).
    /// - Parameters:
    ///   - record: the `clean-stop` record found beside the file, if any.
    ///   - recordDescribesFile: whether the file still has the record's change time and size.
    ///   - storedNonce: the store's `stopped_cleanly` value.
    ///   - lostLog: whether a damaged log was set aside at this start.
    static func judge(
        record: CleanStopRecord?, recordDescribesFile: Bool, storedNonce: String?, lostLog: Bool, synchronousOff: Bool = false
    ) -> UncleanStart? {
        if lostLog { return .logDamaged }
        if synchronousOff { return .synchronousOff }
        guard let record else { return .noRecord }
        guard recordDescribesFile else { return .fileChanged }
        guard storedNonce == record.nonce else { return .stopCommitMissing }
        return nil
    }

    public var description: String {
        switch self {
        case .noRecord:
            "no clean-stop record: the last run did not stop cleanly (a crash, kill -9, a power loss), "
                + "or the files are a copy taken while it ran (an online backup restored), or it could not write the "
                + "record, or a version before 0.25.0 ran this directory"
        case .fileChanged:
            "the database file's change time or size is not the one its clean stop recorded: it is a copy "
                + "(a restored backup) or was written over, or its owner or mode changed (chown, chmod, "
                + "a Kubernetes fsGroup applied at every start)"
        case .stopCommitMissing:
            "the store lacks its clean stop's last commit: a power loss lost commits, or the file is a copy "
                + "taken while the node ran"
        case .logDamaged:
            "the write-ahead log was damaged and set aside, with the commits in it"
        case .synchronousOff:
            "synchronous = OFF records no clean stop, so every start takes a new slot"
        }
    }
}
