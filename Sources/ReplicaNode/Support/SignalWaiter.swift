import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Termination signals, handled from before the command runs: `main` installs the handlers of
/// `serve` and `cluster` first thing, so a signal during their start-up is a graceful stop too
/// (not the default action, which kills the process with whatever it had started half-way).
///
/// A `sigaction` handler writes each signal's number into a pipe (`write` is async-signal-safe);
/// a thread of its own reads the pipe and passes the signals to the command's handler, once it
/// has one (those received before are kept for it). That thread unblocks the signals for itself:
/// a process inherits the signal mask of the thread that started it unless its parent resets
/// it (Foundation's `Process` does not; our `ChildProcess` does), and Dispatch's threads (a
/// test runner's) block SIGINT, SIGTERM and SIGHUP. (The handlers must be in place before `ReplicaNodeCommand.main` calls
/// `dispatchMain()`: its main thread then waits in `sigsuspend` with every signal unblocked, so
/// a signal pending from before would meet the default action there. That is why `main` is
/// synchronous and installs them first.)
enum SignalWaiter {
    typealias Handler = @Sendable (_ signal: Int32, _ count: Int) -> Void

    private struct State {
        var installed = false
        var handler: Handler?
        /// Received while there was no handler yet.
        var received: [Int32] = []
    }

    private static let state = Mutex(State())
    /// The pipe's write end, for the C handler (set before any handler is installed).
    nonisolated(unsafe) private static var pipeWrite: Int32 = -1

    /// Installs the handlers of `signals` now (later calls do nothing); what they receive waits
    /// for `handle`.
    static func install(_ signals: [Int32]) {
        let first = state.withLock { state in
            defer { state.installed = true }
            return !state.installed
        }
        guard first else { return }
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe() failed: \(errno)")
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let readEnd = fds[0]
        pipeWrite = fds[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: signal)
            _ = write(SignalWaiter.pipeWrite, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        for signal in signals { sigaction(signal, &action, nil) }
        let thread = Thread {
            var mask = sigset_t()
            sigemptyset(&mask)
            for signal in signals { sigaddset(&mask, signal) }
            pthread_sigmask(SIG_UNBLOCK, &mask, nil)
            var count = 0
            while true {
                var byte: UInt8 = 0
                let read = Glibc.read(readEnd, &byte, 1)
                if read < 0 && errno == EINTR { continue }
                guard read == 1 else { return }
                // 0 is `handle` asking for what came before it.
                let (handler, signals) = state.withLock { state -> (Handler?, [Int32]) in
                    if byte != 0 { state.received.append(Int32(byte)) }
                    guard let handler = state.handler else { return (nil, []) }
                    defer { state.received.removeAll() }
                    return (handler, state.received)
                }
                guard let handler else { continue }
                for signal in signals {
                    count += 1
                    handler(signal, count)
                }
            }
        }
        thread.name = "signals"
        thread.stackSize = 1 << 18
        thread.start()
    }

    /// Calls `handler` on the signal thread with each of `signals` received (also those received
    /// since `install`), and how many have been received so far (1 for the first).
    static func handle(_ signals: [Int32], _ handler: @escaping Handler) {
        install(signals)
        state.withLock { $0.handler = handler }
        var wake: UInt8 = 0
        _ = write(pipeWrite, &wake, 1)
    }

    /// `serve`'s signals. SIGHUP too: its default action would end the process at once when the
    /// terminal it runs in closes, without committing queued writes or answering requests. And
    /// SIGQUIT (Ctrl-\\, often pressed when Ctrl-C seems slow): the Swift runtime takes it for a
    /// crash, prints a backtrace and leaves the process running (a `cluster` spun a core at
    /// that); a graceful stop, as nginx takes it. Installed in this order: SIGQUIT first, so a
    /// handler of ours for SIGHUP (the last) means the runtime's for SIGQUIT is gone.
    static let termination = [SIGQUIT, SIGINT, SIGTERM, SIGHUP]

    /// `serve`'s handling: the first signal is passed to `first` for a graceful shutdown; a
    /// second one exits at once (status 130), for an operator who does not want to wait.
    static func handleTermination(_ first: @escaping @Sendable (Int32) -> Void) {
        handle(termination) { signal, count in
            if count == 1 { first(signal) } else { exit(130) }
        }
    }
}

/// The first termination signal received, if any: what a start-up checks between its steps.
final class ReceivedSignal: Sendable {
    private let value = Atomic<Int32>(0)

    var signal: Int32? {
        let signal = value.load(ordering: .acquiring)
        return signal == 0 ? nil : signal
    }

    func record(_ signal: Int32) {
        _ = value.compareExchange(expected: 0, desired: signal, ordering: .acquiringAndReleasing)
    }
}
