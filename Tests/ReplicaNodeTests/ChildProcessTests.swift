import Foundation
import Spawn
import Synchronization
import Testing

/// `ChildProcess`, with real programs: what a child inherits, how its end is reported, and a
/// program that cannot start.
@Suite struct ChildProcessTests {
    /// What `sh -c SCRIPT` printed.
    private func shell(_ script: String) throws -> String {
        try runCapturingOutput("/bin/sh", ["-c", script]).stdout
    }

    @Test(arguments: [
        (Int32(0), ChildProcess.Termination.exited(0)),
        (0x0300, .exited(3)),
        (0xff00, .exited(255)),
        (9, .signalled(9)),
        (0x8b, .signalled(11)),  // 11 with the core-dump bit
    ])
    func aWaitStatusIsDecoded(status: Int32, termination: ChildProcess.Termination) {
        #expect(ChildProcess.Termination(waitStatus: status) == termination)
    }

    /// A descriptor the parent left inheritable (no close-on-exec) does not reach the child.
    @Test func theChildHasNoDescriptorOfTheParentsButItsStandardOnes() throws {
        let devNull = open("/dev/null", O_RDONLY)
        try #require(devNull >= 0)
        defer { close(devNull) }
        let leaked = fcntl(devNull, F_DUPFD, 500)  // high, away from the shell's own
        try #require(leaked >= 500)
        defer { close(leaked) }
        let listed = try shell("ls /proc/$$/fd").split(separator: "\n").map(String.init)
        #expect(["0", "1", "2"].allSatisfy(listed.contains), "\(listed)")
        #expect(!listed.contains("\(leaked)"), "\(listed)")
    }

    /// Whatever this thread blocks or the process ignores, the child starts with nothing blocked
    /// and no signal ignored (a node must get SIGTERM; a shell pipeline must get SIGPIPE).
    @Test func theChildStartsWithEverySignalAtItsDefault() throws {
        _ = signal(SIGPIPE, SIG_IGN)  // left so: the test runner ignores it anyway (see `runCapturingOutput`)
        var blocked = sigset_t(), old = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &old)
        defer { pthread_sigmask(SIG_SETMASK, &old, nil) }
        let output = try runCapturingOutput("/bin/grep", ["-E", "^Sig(Blk|Ign)", "/proc/self/status"]).stdout
        // Bit n - 1 stands for signal n. Signals 1-31 only: the C library keeps 32 and 33 for
        // itself (and the test runner's process ignores them; they cannot be reset).
        let masks = output.split(separator: "\n").compactMap { line in line.split(separator: "\t").last.flatMap { UInt64($0, radix: 16) } }
        #expect(masks.count == 2 && masks.allSatisfy { $0 & 0x7fff_ffff == 0 }, "\(output)")
    }

    /// A child runs at the process's nice value, not at the one of the thread that started it
    /// (on Linux each thread has its own; Swift's pool threads run at -2 as root, and so did the
    /// nodes `cluster` started).
    @Test(.enabled(if: getuid() == 0, "raising a thread's nice value back needs root"))
    func theChildRunsAtTheProcessPriorityWhateverTheSpawningThreads() throws {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let started = Mutex<Result<ChildProcess, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = setpriority(which, 0, getpriority(which, id_t(getpid())) + 5)  // this thread only (and it ends)
            started.withLock { $0 = Result { try ChildProcess("/bin/sleep", ["30"]) } }
            done.signal()
        }
        done.wait()
        let child = try #require(try started.withLock { $0 }?.get())
        defer { child.signal(SIGKILL) }
        let stat = try String(contentsOfFile: "/proc/\(child.processIdentifier)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ") ")!.upperBound...].split(separator: " ")
        #expect(Int32(fields[16]) == getpriority(which, id_t(getpid())), "\(stat)")  // field 19: nice
    }

    /// A Ctrl-C for the parent's group does not reach the child.
    @Test func theChildLeadsAProcessGroupOfItsOwn() throws {
        let child = try ChildProcess("/bin/sleep", ["30"])
        defer { child.signal(SIGKILL) }
        #expect(getpgid(child.processIdentifier) == child.processIdentifier)
        #expect(getpgid(child.processIdentifier) != getpgrp())
    }

    @Test func theEndIsReportedOnceAsAnExitOrASignal() throws {
        let reported = Mutex<[ChildProcess.Termination]>([])
        let exited = try ChildProcess("/bin/sh", ["-c", "exit 3"]) { _, termination in reported.withLock { $0.append(termination) } }
        #expect(exited.wait() == .exited(3))
        let killed = try ChildProcess("/bin/sleep", ["30"]) { _, termination in reported.withLock { $0.append(termination) } }
        #expect(killed.isRunning)
        killed.signal(SIGKILL)
        #expect(killed.wait() == .signalled(SIGKILL))
        #expect(killed.wait() == .signalled(SIGKILL), "waiting again answers at once")
        killed.signal(SIGKILL)  // reaped: its id may be another process's, so nothing is sent
        // `onExit` runs after the reaping that `wait()` waits for.
        let deadline = ContinuousClock.now + .seconds(5)
        while reported.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(reported.withLock { $0.map(\.description) }.sorted() == ["exited with status 3", "was killed by signal 9"])
    }

    @Test func aProgramThatCannotStartIsAClearError() {
        #expect {
            try ChildProcess("/nonexistent/replica-node", ["serve"])
        } throws: { error in
            "\(error)" == "cannot start /nonexistent/replica-node: No such file or directory"
        }
        #expect {
            try ChildProcess("/bin/true", directory: "/nonexistent")
        } throws: { error in
            "\(error)" == "cannot start /bin/true in /nonexistent: No such file or directory"
        }
    }

    /// Standard input from the parent, output and errors captured apart, in a directory given.
    @Test func streamsAndDirectoryAreTheOnesAsked() throws {
        let result = try runCapturingOutput("/bin/sh", ["-c", "cat; pwd; echo oops >&2; exit 4"], directory: URL(fileURLWithPath: "/tmp"),
                                            input: Data("typed\n".utf8))
        #expect(result.status == 4)
        #expect(result.stdout == "typed\n/tmp\n")
        #expect(result.stderr == "oops\n")
    }
}
