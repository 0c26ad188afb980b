@_spi(Simulation) import ReplicaCore
import Synchronization

/// The executor of one simulated replica: what `PollLoop` is to a real one, without a thread.
/// The simulation runs its turns (`runTurn`) on its own thread, one node at a time: the
/// replica's jobs, then one pass of its loop body over the simulated sockets that have input.
/// Tasks can prefer it as their executor too, so that what a simulation awaits (a `leave`)
/// runs in the node's turns, in order.
final class SimulatedLoop: ReplicaLoop, TaskExecutor, @unchecked Sendable {
    private struct Queue: ~Copyable {
        var jobs: [UnownedJob] = []
        var work: [@Sendable () -> Void] = []
    }
    /// Jobs may be enqueued from other threads (a test awaiting a replica): kept under a lock.
    private let queue = Mutex(Queue())
    private var body: (() -> Duration?)?
    /// True while the simulation runs this loop's turn (`checkIsolated`).
    private var running = false
    /// Called (on the enqueuing thread) when something arrives for this loop.
    var wake: (@Sendable () -> Void)?

    init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        wake?()
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(running, "not in this simulated replica's turn")
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.work.append(work) }
        wake?()
    }

    public func ownerReleased() {
        body = nil
    }

    public func start<Owner: PollLoopOwner>(for owner: Owner) {
        body = { [weak owner] in
            guard let owner else { return nil }
            let (items, timeout) = owner.assumeIsolated { ($0.pollItems, $0.pollTimeout) }
            var ready: [Owner.PollRole] = []
            for item in items {
                if case .socket(let socket) = item.source, (socket as? SimulatedSocket)?.hasInput == true { ready.append(item.role) }
            }
            owner.assumeIsolated { $0.pollDidReturn(ready: ready) }
            return timeout
        }
    }

    /// Whether jobs or handed-over work wait.
    var hasWork: Bool { queue.withLock { !$0.jobs.isEmpty || !$0.work.isEmpty } }

    /// One turn: the jobs and work queued, then the loop body. Returns how long the replica may
    /// sleep after it (nil: until something arrives), as its `pollTimeout` says.
    func runTurn() -> Duration? {
        running = true
        defer { running = false }
        while true {
            let (jobs, work) = queue.withLock { queue in
                defer { queue.jobs.removeAll(); queue.work.removeAll() }
                return (queue.jobs, queue.work)
            }
            if jobs.isEmpty && work.isEmpty { break }
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            for item in work { item() }
        }
        return body?()
    }

    /// Runs `body` as if in this replica's turn (to read its state between turns).
    func inTurn<T>(_ body: () throws -> T) rethrows -> T {
        let was = running
        running = true
        defer { running = was }
        return try body()
    }
}
