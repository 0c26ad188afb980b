import CZMQ
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a poll loop waits on for its owner: a ZeroMQ socket or a plain file descriptor (a UDP
/// socket), tagged with the owner's name for it, so that readiness is dispatched by role and
/// never by position.
public struct PollItem<Role: Sendable>: Sendable {
    public enum Source: Sendable {
        case socket(any MessageSocket)
        case fileDescriptor(Int32)
    }

    public var source: Source
    public var role: Role

    public init(_ socket: any MessageSocket, role: Role) {
        source = .socket(socket)
        self.role = role
    }

    public init(fileDescriptor: Int32, role: Role) {
        source = .fileDescriptor(fileDescriptor)
        self.role = role
    }
}

/// An actor whose executor is a ``PollLoop``: it owns ZeroMQ sockets and is woken when they
/// become readable, like a swift-nio `EventLoop` owns its channels.
public protocol PollLoopOwner: Actor {
    /// The owner's name for each thing it waits on (one handler per socket).
    associatedtype PollRole: Sendable
    /// What to wait on. Read once per wake-up; keep it cached when it is large.
    var pollItems: [PollItem<PollRole>] { get }
    /// How long the loop may sleep when nothing is readable (nil: until woken).
    var pollTimeout: Duration? { get }
    /// Called on the loop thread, isolated to the owner, after every wait, with the roles of the
    /// items that have input (possibly none: a timeout or a wake-up).
    func pollDidReturn(ready: [PollRole])
}

/// A dedicated thread that is both a serial executor for one actor and a `zmq_poll` loop over
/// that actor's sockets.
///
/// Why: libzmq sockets must stay on one thread, and waiting in `zmq_poll` must not block Swift's
/// cooperative pool. Running the actor's jobs on the polling thread gives the actor exclusive,
/// compiler-checked ownership of its sockets, and lets it batch everything that arrived in one
/// wake-up (group commit) before it sleeps again.
public final class PollLoop: SerialExecutor, @unchecked Sendable {
    private struct Mailbox: ~Copyable {
        var jobs: [UnownedJob] = []
        /// Work handed over with `execute`, run on the loop thread in order.
        var work: [@Sendable () -> Void] = []
        var signalled = false
    }

    private let mailbox = Mutex(Mailbox())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let name: String
    private let threadID = Mutex<pthread_t?>(nil)

    public init(name: String) {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe() failed: \(errno)")
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        self.name = name
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: SerialExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let mustSignal = mailbox.withLock { box in
            box.jobs.append(job)
            defer { box.signalled = true }
            return !box.signalled
        }
        if mustSignal { signal() }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(isLoopThread, "not on the \(name) poll loop thread")
    }

    public var isLoopThread: Bool {
        guard let loop = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(loop, pthread_self()) != 0
    }

    private func signal() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func drainWakeups() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    // MARK: Running

    /// Starts the loop thread for `owner`. The thread keeps its owner alive for the life of the
    /// process (`owner` is the argument of `run`, held for the call): the owner's sockets are
    /// closed by its shutdown on this thread, never by a `deinit` on another thread while this
    /// one polls them, and jobs sent to the owner after its shutdown are still served. (An owner
    /// released before the thread starts is freed at once: `run` finds it gone and returns.)
    public func start<Owner: PollLoopOwner>(for owner: Owner) {
        let thread = Thread { [self, weak owner] in
            self.threadID.withLock { $0 = pthread_self() }
            self.run(owner: owner)
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `work` on the loop thread, before its next wait (as swift-nio's
    /// `EventLoop.execute`): for callers on other threads that must not create a task, such as
    /// a write submitted without awaiting. It runs even after the owner has shut down.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let mustSignal = mailbox.withLock { box in
            box.work.append(work)
            defer { box.signalled = true }
            return !box.signalled
        }
        if mustSignal { signal() }
    }

    /// Wakes the loop so it notices that its owner is gone; the owner calls this from `deinit`.
    public func ownerReleased() {
        signal()
    }

    // Specialized for the node: generic, the loop looks up type metadata on every turn.
    @_specialize(where Owner == Replica)
    private func run<Owner: PollLoopOwner>(owner: Owner?) {
        weak let weakOwner = owner
        var items: [zmq_pollitem_t] = []
        while true {
            let (jobs, work) = mailbox.withLock { box in
                defer { box.jobs.removeAll(keepingCapacity: true); box.work.removeAll(keepingCapacity: true); box.signalled = false }
                return (box.jobs, box.work)
            }
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            for item in work { item() }
            // It serves the owner's jobs even after the owner has closed its sockets, so no caller
            // is left waiting. (The owner is not released while this runs; see `start`.)
            guard let (pollItems, timeout) = weakOwner?.assumeIsolated({ ($0.pollItems, $0.pollTimeout) }) else { break }
            items.removeAll(keepingCapacity: true)
            items.append(zmq_pollitem_t(socket: nil, fd: wakeRead, events: Int16(ZMQ_POLLIN), revents: 0))
            var roles: [Owner.PollRole] = []
            roles.reserveCapacity(pollItems.count)
            for item in pollItems {
                switch item.source {
                case .socket(let socket):
                    guard let handle = socket.pollHandle else { continue }
                    items.append(zmq_pollitem_t(socket: handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0))
                case .fileDescriptor(let fd):
                    items.append(zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLIN), revents: 0))
                }
                roles.append(item.role)
            }
            let hasJobs = mailbox.withLock { !$0.jobs.isEmpty || !$0.work.isEmpty }
            let milliseconds: Int = hasJobs ? 0 : timeout.map { max(0, Int(($0 / .milliseconds(1)).rounded(.up))) } ?? -1
            if zmq_poll(&items, Int32(items.count), milliseconds) < 0 {
                let error = ZMQError.last("zmq_poll")
                // A broken poll set is a programming error; fail loudly rather than spin.
                precondition(error.isInterrupted, "zmq_poll failed in \(name): \(error)")
            }
            if items[0].revents != 0 { drainWakeups() }
            guard items.count > 1 || timeout != nil else { continue }
            var ready: [Owner.PollRole] = []
            for (index, role) in roles.enumerated() where items[index + 1].revents & Int16(ZMQ_POLLIN) != 0 {
                ready.append(role)
            }
            weakOwner?.assumeIsolated { $0.pollDidReturn(ready: ready) }
        }
        threadID.withLock { $0 = nil }
    }
}
