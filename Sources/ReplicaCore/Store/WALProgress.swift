import Dispatch
import Synchronization

/// What the writer's commits tell the WAL checkpointer: SQLite's WAL hook runs after each
/// commit with the number of frames the log holds (it falls when the log is rewound). The
/// checkpointer reads it instead of the log file's size, which a rewound log keeps.
///
/// The checkpointer sleeps until a commit makes a pass due, rather than polling: it arms a
/// condition (`wait(until:orWhen:)`), and the commit that meets it signals the checkpointer
/// once. An idle store wakes nobody.
final class WALProgress: Sendable {
    struct Snapshot: Equatable, Sendable {
        var commits = 0
        var logFrames = 0
    }

    private struct State {
        var snapshot = Snapshot()
        /// What the checkpointer waits for, if it waits; cleared when met.
        var wakeCondition: (@Sendable (Snapshot) -> Bool)?
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)

    /// Called on the writer's thread, inside SQLite's commit.
    func committed(logFrames: Int) {
        let met = state.withLock { state in
            state.snapshot.commits &+= 1
            state.snapshot.logFrames = logFrames
            guard let condition = state.wakeCondition, condition(state.snapshot) else { return false }
            state.wakeCondition = nil
            return true
        }
        if met { signal.signal() }
    }

    var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Waits until a commit meets `condition` (at once if the progress already does), until
    /// `deadline`, or until `interrupt()`. Returns the progress then. One waiter at a time.
    func wait(until deadline: DispatchTime, orWhen condition: @escaping @Sendable (Snapshot) -> Bool) -> Snapshot {
        let metAlready = state.withLock { state in
            if condition(state.snapshot) { return true }
            state.wakeCondition = condition
            return false
        }
        if !metAlready {
            // A signal that arrives between the timeout and clearing the condition stays pending
            // and ends the next wait at once: one extra look, nothing missed.
            _ = signal.wait(timeout: deadline)
        }
        return state.withLock { state in
            state.wakeCondition = nil
            return state.snapshot
        }
    }

    /// Ends the current (or next) wait now.
    func interrupt() { signal.signal() }
}
