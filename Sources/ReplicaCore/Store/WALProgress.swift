import Synchronization

/// What the writer's commits tell the WAL checkpointer: SQLite's WAL hook runs after each
/// commit with the number of frames the log holds (it falls when the log is rewound). The
/// checkpointer reads it instead of the log file's size, which a rewound log keeps.
final class WALProgress: Sendable {
    struct Snapshot: Equatable, Sendable {
        var commits = 0
        var logFrames = 0
    }

    private let state = Mutex(Snapshot())

    /// Called on the writer's thread, inside SQLite's commit.
    func committed(logFrames: Int) {
        state.withLock { state in
            state.commits &+= 1
            state.logFrames = logFrames
        }
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}
