import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program started by `posix_spawn`, whose exit is reaped by a thread of its own.
///
/// Why not Foundation's `Process`: on Linux its `run()` copies whole 256-byte `d_name` fields
/// out of `/proc/self/fd` entries while it looks for the highest open descriptor, and crashes
/// when an entry ends a page (swift-corelibs-foundation #5472, fixed after Swift 6.3.1). It
/// crashed our test suites twice in a day; `replica-node cluster` starts its nodes the same way.
///
/// What a child gets, on every platform:
/// - a process group of its own, so a Ctrl-C meant for its parent (`cluster`, a test runner)
///   does not reach it: the parent decides how its children stop;
/// - every signal at its default action and none blocked (a parent that ignores SIGPIPE, or a
///   Dispatch thread that blocks SIGTERM, passes neither on);
/// - only descriptors 0, 1 and 2: whatever else the parent has open (sockets, database files,
///   the other ends of pipes) is closed in the child.
public final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// The parent's own.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe; the parent's end is `standardInput`, `standardOutput` or `standardError`.
        case pipe
        /// An open descriptor of the parent's above 2 (a log file), which stays the parent's to
        /// close. (0, 1 or 2 would name the child's stream as set up so far, not the parent's.)
        case descriptor(Int32)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        /// It ended, but how is not known: something else reaped it (`waitpid` failed with the
        /// `errno` given). Not a success.
        case unknown(errno: Int32)

        /// The exit status, or the signal's number, as `Process.terminationStatus` has it.
        public var status: Int32 {
            switch self {
            case .exited(let status), .signalled(let status): status
            case .unknown: -1
            }
        }

        /// Decodes a `waitpid` status (the `WIFEXITED` macros are not imported into Swift): the
        /// low 7 bits are the signal that ended it (0 if it exited), the next byte its exit status.
        public init(waitStatus status: Int32) {
            let signal = status & 0x7f
            self = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        }

        /// Exited with status 0.
        public var isSuccess: Bool { self == .exited(0) }

        /// "exited with status 1", "was killed by signal 9".
        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "was killed by signal \(signal)"
            case .unknown(let code): "ended, but how is unknown (\(String(cString: strerror(code))))"
            }
        }
    }

    public let processIdentifier: pid_t
    /// The parent's end of each stream started as `.pipe` (nil otherwise).
    public let standardInput: FileHandle?
    public let standardOutput: FileHandle?
    public let standardError: FileHandle?

    private let ended = Mutex<Termination?>(nil)
    /// Entered while the child runs; left once it is reaped (any number of `wait()`s).
    private let running = DispatchGroup()

    /// Starts `executable` (a path: no `PATH` search) with `arguments` (without the program's
    /// name). `environment` is added to this process's own. `onExit` is called once, on the
    /// reaping thread, after the child is reaped.
    public init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:], directory: String? = nil,
        input: Stream = .inherit, output: Stream = .inherit, errors: Stream = .inherit,
        onExit: (@Sendable (ChildProcess, Termination) -> Void)? = nil
    ) throws {
        Self.reapingOurOwn
        var pipes = PipeEnds()
        var started = false
        defer {
            pipes.closeChildEnds()
            if !started { pipes.closeParentEnds() }  // a pipe or the spawn failed
        }
        let streams = [input, output, errors]
        var actions = SpawnFileActions()
        defer { actions.destroy() }
        for (target, stream) in streams.enumerated() {
            let target = Int32(target)
            switch stream {
            case .inherit:
                actions.inherit(target)
            case .null:
                actions.open(target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY)
            case .descriptor(let descriptor):
                actions.duplicate(descriptor, to: target)
            case .pipe:
                let ends = try pipes.make(for: target)
                actions.duplicate(ends.child, to: target)
            }
        }
        if let directory { actions.changeDirectory(to: directory) }
        actions.closeAllAbove2()

        var attributes = SpawnAttributes()
        defer { attributes.destroy() }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }

        var pid: pid_t = 0
        let failure = Self.atTheProcessPriority { posix_spawn(&pid, executable, &actions.raw, &attributes.raw, argv, envp) }
        guard failure == 0 else { throw SpawnError(executable: executable, directory: directory, code: failure) }
        started = true
        processIdentifier = pid
        standardInput = pipes.parentHandle(for: 0)
        standardOutput = pipes.parentHandle(for: 1)
        standardError = pipes.parentHandle(for: 2)
        running.enter()
        Thread.detachNewThread { [self] in
            let termination = reap()
            running.leave()
            onExit?(self, termination)
        }
    }

    /// How it ended, or nil while it runs.
    public var termination: Termination? { ended.withLock { $0 } }

    public var isRunning: Bool { termination == nil }

    /// Blocks until the child has exited and been reaped.
    @discardableResult
    public func wait() -> Termination {
        running.wait()
        return termination!
    }

    /// Sends `signal` unless the child has been reaped (its id may then be another process's).
    public func signal(_ signal: Int32) {
        ended.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Waits for the exit without reaping it, then reaps it under the lock `signal` takes: so
    /// no signal can reach another process that was given the same id.
    private func reap() -> Termination {
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        return ended.withLock { ended in
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(processIdentifier, &status, 0) } while reaped < 0 && errno == EINTR
            let termination = reaped == processIdentifier ? Termination(waitStatus: status) : .unknown(errno: errno)
            ended = termination
            return termination
        }
    }

    /// Runs `body` (a spawn) with the calling thread at the process's nice value. On Linux each
    /// thread has its own, and a child takes its spawning thread's: Swift's concurrency pool
    /// threads run at -2 where they may (as root), and the nodes of a `cluster` ran above
    /// normal priority.
    private static func atTheProcessPriority<R>(_ body: () -> R) -> R {
        #if os(Linux)
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let calling: id_t = 0  // the calling thread, on Linux
        errno = 0
        let thread = getpriority(which, calling)
        let process = getpriority(which, id_t(getpid()))  // the main thread's
        if errno == 0, thread != process, setpriority(which, calling, process) == 0 {
            defer { _ = setpriority(which, calling, thread) }
            return body()
        }
        #endif
        return body()
    }

    /// With SIGCHLD ignored (a disposition inherited across exec from whoever started us), the
    /// system reaps children itself and `waitpid` cannot tell how they ended: a crashed node
    /// would pass for one that stopped cleanly. Set back to the default once, before the first
    /// spawn (the default action of SIGCHLD is to do nothing).
    private static let reapingOurOwn: Void = {
        var current = sigaction()
        guard sigaction(SIGCHLD, nil, &current) == 0 else { return }
        #if canImport(Glibc)
        let handler = current.__sigaction_handler.sa_handler
        #else
        let handler = current.__sigaction_u.__sa_handler
        #endif
        // A C function pointer: SIG_IGN is the address 1 (on Linux and Darwin alike).
        guard let handler, unsafeBitCast(handler, to: Int.self) == 1 else { return }
        #if canImport(Glibc)
        Glibc.signal(SIGCHLD, SIG_DFL)
        #else
        Darwin.signal(SIGCHLD, SIG_DFL)
        #endif
    }()
}

/// `posix_spawn` refused to start the program (not found, not executable, out of processes).
public struct SpawnError: Error, CustomStringConvertible {
    public var executable: String
    /// The working directory asked for: a missing one fails the spawn as a missing program does.
    public var directory: String?
    public var code: Int32
    public var description: String {
        "cannot start \(executable)\(directory.map { " in \($0)" } ?? ""): \(String(cString: strerror(code)))"
    }
}
