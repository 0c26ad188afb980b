import ArgumentParser
import Foundation
import ReplicaCore
import Spawn
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Start N local nodes on loopback, each peered with all others; Ctrl-C stops them all.",
        discussion: """
            Node K listens on 127.0.0.1:(base-port + 2K) (and the port after it for sync), keeps \
            its data in DIR/nodeK and appends its log to DIR/nodeK.log (a line marks each start). \
            Data survives a restart of the cluster; a cluster already running on DIR is left \
            alone (exit 1; its keys and logs untouched). \
            Nodes authenticate each other with CURVE keys made in DIR/keys on first start; \
            --insecure runs them open instead. It prints commands to try from another terminal, \
            with paths that work from anywhere. SIGINT (Ctrl-C), SIGTERM, SIGHUP or SIGQUIT \
            (Ctrl-\\) stops every node (SIGTERM, then SIGKILL after 10 s; exit 0, or 1 if a node \
            had to be killed; a second signal kills them at once, exit 130). If the cluster \
            itself is killed (kill -9), each node stops by itself within a second (they run with \
            --parent). A node that stops cleanly by itself (`replica-node leave`, or a SIGTERM \
            of its own) is reported and the others keep running; the cluster exits 0 once every \
            node has. A node that fails (exits with an error, or is killed) stops the others \
            too, and the cluster exits with 1.

            Example:
              replica-node cluster --nodes 3 --data cluster-data
            """)

    @Option(help: "How many nodes to start (1...64).") var nodes = 3
    @Option(help: "First port; node K uses base-port + 2K and the port after it.") var basePort: UInt16 = 7100
    @Option(help: ArgumentHelp("Directory holding each node's data directory and log.", valueName: "dir"))
    var data = "cluster-data"

    @Flag(help: "Run the nodes without CURVE encryption and authentication.")
    var insecure = false

    func validate() throws {
        guard (1...64).contains(nodes) else { throw ValidationError("--nodes must be between 1 and 64.") }
        guard Int(basePort) + 2 * nodes + 1 < 65_535 else { throw ValidationError("--base-port too high for \(nodes) nodes.") }
    }

    /// The signals that stop the cluster (SIGHUP: its terminal closed; SIGQUIT: see `SignalWaiter.termination`).
    static let signals = SignalWaiter.termination

    func run() async throws {
        // Signals first, before any node exists. Each node runs in a process group of its own
        // (`ChildProcess`), so a Ctrl-C, a `kill` or a closed terminal reaches only this
        // process: it must stop the nodes, or they would live on holding their ports and data
        // directories (and answer the next cluster's clients as if it were healthy).
        let children = ClusterProcesses()
        SignalWaiter.handle(Self.signals) { signal, count in
            if count == 1 {
                children.stop(because: .signal(signal))
            } else {
                // Again: an operator who does not want to wait. Nothing is left running.
                children.killAll()
                Glibc.exit(130)
            }
        }
        // A closed terminal or pipe must not kill this process before it has stopped the nodes.
        Glibc.signal(SIGPIPE, SIG_IGN)
        let root = URL(fileURLWithPath: data).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw FileProblem(action: "cannot create", path: data, error: error)
        }
        // Refused before anything in DIR is touched (keys, logs), if a node already serves one of
        // its data directories (a cluster running on DIR): its nodes would be refused anyway.
        for index in 1...nodes {
            if let held = Self.holder(of: root.appendingPathComponent("node\(index)")) {
                Output.error("cannot start the cluster: \(held) (is a cluster already running on \(root.path)?)")
                throw ExitCode.failure
            }
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let addresses = (1...nodes).map { "127.0.0.1:\(Int(basePort) + 2 * $0)" }
        let keys = root.appendingPathComponent("keys")
        if !insecure {
            for index in 1...nodes where !FileManager.default.fileExists(atPath: keys.appendingPathComponent("node\(index).key").path) {
                _ = try KeyFiles.write(try CurveKeyPair.generate(), id: "node\(index)", to: keys, force: true)
            }
        }
        var ids: [String] = []
        do {
            for index in 0..<nodes where children.reason == nil {
                let id = "node\(index + 1)"
                let directory = root.appendingPathComponent(id)
                var arguments = ["serve", "--id", id, "--listen", addresses[index], "--data", directory.path]
                // A node whose cluster is gone (even by SIGKILL, which cannot be passed on) stops.
                // Not as PID 1 (a container's): nothing outlives it there.
                if getpid() != 1 { arguments += ["--parent", "\(getpid())"] }
                arguments += insecure ? ["--insecure"] : ["--key", keys.appendingPathComponent("\(id).key").path, "--trust", keys.path]
                for (other, address) in addresses.enumerated() where other != index { arguments += ["--peer", "node\(other + 1)@\(address)"] }
                let log = try Self.openLog(root.appendingPathComponent("\(id).log"), id: id)
                try withExtendedLifetime(log) { try children.launch(executable.path, arguments, output: log.fileDescriptor, id: id) }
                ids.append(id)
            }
        } catch {
            children.finishedLaunching()
            Output.error("cannot start the nodes: \(error)")
            _ = await children.stopAll(root: root)
            throw ExitCode.failure
        }
        children.finishedLaunching()
        if children.reason == nil {
            print("Starting \(nodes) node(s) in \(root.path) "
                + (insecure ? "WITHOUT encryption or authentication (--insecure) ..." : "with CURVE keys from \(keys.path) ..."))
            Output.flush()
            let ready = await waitUntilServing(root: root, ids: ids, until: children)
            if children.reason == nil {
                if !ready {
                    Output.error("not every node answered within 15 s; see the logs in \(root.path)")
                }
                printHints(root: root, ids: ids, addresses: addresses, executable: executable)
            }
        }
        let reason = await children.waitForStopReason()
        switch reason {
        case .signal(let signal):
            print("Stopping \(children.runningCount) node(s) (signal \(signal)) ...")
        case .exited(let id, let status):
            Output.error("\(id) \(status) while the cluster was running (see \(root.appendingPathComponent("\(id).log").path)); stopping the other node(s)")
        case .allStoppedCleanly:
            print("Every node has stopped (they left, or were stopped one by one).")
        }
        Output.flush()
        let problems = await children.stopAll(root: root)
        for problem in problems { Output.error(problem) }
        print("Stopped. Data kept in \(root.path).")
        Output.flush()
        if case .exited = reason { throw ExitCode.failure }
        if !problems.isEmpty { throw ExitCode.failure }
    }

    /// Who holds `directory` (a node serving it), or nil if it is free, does not exist or
    /// cannot be told (the node says why when it starts). The lock is probed without being
    /// taken: taking it wrote this command's pid into it, and a node starting at that moment was
    /// refused, told this command held its directory.
    static func holder(of directory: URL) -> DataDirectoryLock.Held? {
        guard case .held(let pid) = DataDirectoryLock.probe(directory: directory) else { return nil }
        return DataDirectoryLock.Held(directory: directory.path, pid: pid)
    }

    /// Opens node `id`'s log for appending, after a line marking this start. Appended, never
    /// truncated: a node still writing to it (one started on the directory since the check
    /// above) keeps its lines, and earlier runs' logs stay for reading.
    static func openLog(_ url: URL, id: String) throws -> FileHandle {
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw FileProblem(action: "cannot open log", path: url.path, error: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO))
        }
        let log = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try log.write(contentsOf: Data("=== replica-node cluster: \(id) starting at \(TimeText.iso8601(Date())) ===\n".utf8))
        return log
    }

    private func printHints(root: URL, ids: [String], addresses: [String], executable: URL) {
        print("")
        print("NODE    LISTEN            DATA")
        for (index, id) in ids.enumerated() {
            print("\(id.padding(toLength: 8, withPad: " ", startingAt: 0))\(addresses[index].padding(toLength: 18, withPad: " ", startingAt: 0))\(root.appendingPathComponent(id).path)")
        }
        let first = Self.shellWord(root.appendingPathComponent("node1").path)
        let last = Self.shellWord(root.appendingPathComponent("node\(nodes)").path)
        let command = Self.shellWord(Self.commandName(for: executable))
        print("""

            Try, from another terminal:
              \(command) set greeting '"hello"' --data \(first)
              \(command) get greeting --data \(last)
              \(command) status --data \(last)

            Logs: \(root.path)/nodeK.log. Press Ctrl-C to stop all nodes.
            """)
        Output.flush()  // a reader of a pipe sees the hints now, not at exit
    }

    /// `text` as one word for a POSIX shell: as it is when it holds only characters no shell
    /// treats specially, else in single quotes (a `'` inside as `'\''`). A hint's paths must
    /// survive pasting, spaces and all.
    static func shellWord(_ text: String) -> String {
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@,%")
        if !text.isEmpty && text.allSatisfy(plain.contains) { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `replica-node` if that name finds this executable on $PATH, else its absolute path: a
    /// hint must work when pasted into another terminal.
    static func commandName(for executable: URL) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("replica-node").resolvingSymlinksInPath()
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate.path == executable.path ? "replica-node" : executable.path
            }
        }
        return executable.path
    }

    /// Waits until every node's control socket answers a status request, or the cluster is
    /// stopping (a signal, a node that exited).
    private func waitUntilServing(root: URL, ids: [String], until children: ClusterProcesses) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(15)
        var pending = Set(ids)
        while !pending.isEmpty && ContinuousClock.now < deadline && children.reason == nil {
            for id in pending {
                var client = try? ControlClient(dataDirectory: root.appendingPathComponent(id))
                client?.timeout = .milliseconds(500)
                if (try? client?.call(.status)) != nil { pending.remove(id) }
            }
            if !pending.isEmpty { try? await Task.sleep(for: .milliseconds(100)) }
        }
        return pending.isEmpty
    }
}

/// The nodes `cluster` started, and why it stops: a signal, or a node that exited on its own.
/// Shared with the signal thread and with the threads `ChildProcess` reports exits on.
final class ClusterProcesses: Sendable {
    enum StopReason: Sendable {
        case signal(Int32)
        /// `status` says how: "exited with status 1", "was killed by signal 9".
        case exited(id: String, status: String)
        /// Every node stopped cleanly on its own (each left, or was stopped one by one).
        case allStoppedCleanly
    }

    private struct Child {
        var id: String
        var process: ChildProcess
        var exit: ChildProcess.Termination?
    }

    private struct State {
        var children: [Child] = []
        var reason: StopReason?
        var stopping = false
        /// Nodes are still being started: a node that already stopped cleanly is not "every node".
        var launching = true
        var waiters: [CheckedContinuation<StopReason, Never>] = []
        /// The exit of every child has been recorded.
        var allExited: Bool { children.allSatisfy { $0.exit != nil } }
        /// Children started whose exit is not recorded yet.
        var running: Int { children.filter { $0.exit == nil }.count }
    }

    private let state = Mutex(State())

    /// Why the cluster stops, once it does.
    var reason: StopReason? { state.withLock { $0.reason } }

    /// Starts `executable ARGUMENTS` as node `id`, its standard output and error to `output` (or
    /// the cluster's own), and follows its exit. Under the lock, so that a signal arriving
    /// meanwhile finds it in the list and stops it too (and an exit reported at once waits for it).
    func launch(_ executable: String, _ arguments: [String], output: Int32? = nil, id: String) throws {
        let stream: ChildProcess.Stream = output.map { .descriptor($0) } ?? .inherit
        try state.withLock { state in
            let process = try ChildProcess(executable, arguments, output: stream, errors: stream) { [weak self] process, termination in
                self?.exited(process, termination)
            }
            state.children.append(Child(id: id, process: process))
        }
    }

    /// How many nodes started and have not exited.
    var runningCount: Int { state.withLock { $0.running } }

    /// Whether node `id` has been started and its exit recorded.
    func hasExited(_ id: String) -> Bool {
        state.withLock { $0.children.contains { $0.id == id && $0.exit != nil } }
    }

    /// Every node has been started (or starting stopped): from now on, the last node to stop
    /// cleanly ends the cluster, including one that stopped before this was called.
    func finishedLaunching() {
        let (reason, waiters) = state.withLock { state in
            state.launching = false
            let allStopped = !state.children.isEmpty && state.allExited && !state.stopping
            return allStopped ? Self.settle(.allStoppedCleanly, in: &state) : (nil, [])
        }
        if let reason { for waiter in waiters { waiter.resume(returning: reason) } }
    }

    /// Records why the cluster stops (the first reason wins) and wakes whoever waits for it.
    func stop(because reason: StopReason) {
        let (settled, waiters) = state.withLock { Self.settle(reason, in: &$0) }
        if let settled { for waiter in waiters { waiter.resume(returning: settled) } }
    }

    /// Sets the reason unless one is set, and hands back the waiters to wake (outside the lock).
    private static func settle(_ reason: StopReason, in state: inout State) -> (StopReason?, [CheckedContinuation<StopReason, Never>]) {
        guard state.reason == nil else { return (nil, []) }
        state.reason = reason
        defer { state.waiters.removeAll() }
        return (reason, state.waiters)
    }

    func waitForStopReason() async -> StopReason {
        await withCheckedContinuation { continuation in
            let reason = state.withLock { state -> StopReason? in
                if state.reason == nil { state.waiters.append(continuation) }
                return state.reason
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }

    /// Records a node's exit and, in the same critical section, whether it stops the cluster, so
    /// that whoever sees the exit also sees its consequence.
    private func exited(_ process: ChildProcess, _ termination: ChildProcess.Termination) {
        let clean = termination.isSuccess
        let outcome = state.withLock { state -> (id: String, running: Int, reason: StopReason?, waiters: [CheckedContinuation<StopReason, Never>])? in
            guard let index = state.children.firstIndex(where: { $0.process === process }) else { return nil }
            state.children[index].exit = termination
            let id = state.children[index].id
            let running = state.running
            // Stopping already (a signal was handled, or another node failed): its exit is part of that.
            guard !state.stopping, state.reason == nil else { return nil }
            if clean {
                // It left the cluster (`leave`), or someone stopped it: a choice, not a failure.
                // The others keep serving (the `leave` example of the help runs against this cluster).
                guard state.allExited, !state.launching else { return (id, running, nil, []) }
                let (reason, waiters) = Self.settle(.allStoppedCleanly, in: &state)
                return (id, running, reason, waiters)
            }
            // A node that fails while the cluster runs (a port taken, a data directory held by a
            // node left over from an earlier cluster, a crash) stops the cluster.
            let (reason, waiters) = Self.settle(.exited(id: id, status: termination.description), in: &state)
            return (id, running, reason, waiters)
        }
        guard let outcome else { return }
        if clean {
            let others = outcome.running == 0 ? "it was the last one running" : "\(outcome.running) other node(s) keep running"
            Output.line("\(outcome.id) stopped cleanly (it left the cluster, or was stopped); \(others)")
            Output.flush()
        }
        if let reason = outcome.reason { for waiter in outcome.waiters { waiter.resume(returning: reason) } }
    }

    /// SIGKILLs every node still running (a second Ctrl-C).
    func killAll() {
        state.withLock { state in
            for child in state.children where child.exit == nil { child.process.signal(SIGKILL) }
        }
    }

    /// Stops every node gracefully: SIGTERM, then SIGKILL for those still running after
    /// `grace`. Returns what went wrong: a node that had to be killed, or stopped with an error.
    func stopAll(root: URL, grace: Duration = .seconds(10)) async -> [String] {
        let running = state.withLock { state -> [Child] in
            state.stopping = true
            return state.children.filter { $0.exit == nil }
        }
        for child in running { child.process.signal(SIGTERM) }
        var problems: [String] = []
        if !(await waitUntilAllExited(within: grace)) {
            let stuck = state.withLock { $0.children.filter { $0.exit == nil } }
            for child in stuck {
                child.process.signal(SIGKILL)
                problems.append("\(child.id) did not stop within \(grace): killed (see \(root.appendingPathComponent("\(child.id).log").path))")
            }
            if !(await waitUntilAllExited(within: .seconds(5))) {
                problems.append("a node did not exit even after SIGKILL")
            }
        }
        let asked = Set(running.map(\.id))
        let alreadyReported: String? = if case .exited(let id, _) = reason { id } else { nil }
        for child in state.withLock({ $0.children }) where child.id != alreadyReported && !problems.contains(where: { $0.hasPrefix(child.id + " ") }) {
            guard let exit = child.exit else { continue }
            // A clean stop: exit 0, or SIGTERM itself for a node that had not installed its handler yet.
            let clean = exit.isSuccess || (exit == .signalled(SIGTERM) && asked.contains(child.id))
            if !clean { problems.append("\(child.id) \(exit) (see \(root.appendingPathComponent("\(child.id).log").path))") }
        }
        return problems
    }

    /// Whether every node has exited within `limit` (their exits are reported on other threads).
    private func waitUntilAllExited(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !state.withLock({ $0.allExited }) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
