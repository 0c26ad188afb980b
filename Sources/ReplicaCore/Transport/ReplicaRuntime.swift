/// Where a replica runs: the sockets it talks through, the loop that runs its jobs and waits on
/// them, its monotonic clock and (for memory storage) its store. By default, libzmq, a
/// `PollLoop` thread, the system's clock and a new `MemoryStore`; a simulation gives its own
/// (the `ReplicaSimulation` library), so that whole clusters run in one thread, on virtual time.
@_spi(Simulation)
public struct ReplicaRuntime: @unchecked Sendable {
    public var sockets: any SocketFactory
    public var loop: any ReplicaLoop
    public var now: @Sendable () -> MonotonicInstant
    /// The store of a `.memory` replica, kept by the simulation across the node's lives.
    public var store: MemoryStore?

    public init(sockets: any SocketFactory, loop: any ReplicaLoop, now: @escaping @Sendable () -> MonotonicInstant, store: MemoryStore? = nil) {
        self.sockets = sockets
        self.loop = loop
        self.now = now
        self.store = store
    }
}

/// What runs a replica's jobs and its loop body (`PollLoopOwner`): a `PollLoop` thread, or a
/// simulation's loop.
@_spi(Simulation)
public protocol ReplicaLoop: SerialExecutor {
    func start<Owner: PollLoopOwner>(for owner: Owner)
    /// Runs `work` on the loop, before its next wait.
    func execute(_ work: @escaping @Sendable () -> Void)
    /// The owner is gone (from its `deinit`).
    func ownerReleased()
}

@_spi(Simulation)
extension PollLoop: ReplicaLoop {}
