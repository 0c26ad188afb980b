import Foundation
import ReplicaCore
import Spawn
import Synchronization

/// The `replica-node` binary built beside the test bundle (or $REPLICA_NODE_BINARY).
let replicaNodeBinary: URL = {
    if let path = ProcessInfo.processInfo.environment["REPLICA_NODE_BINARY"] { return URL(fileURLWithPath: path) }
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("replica-node")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory.deleteLastPathComponent()
    }
    return URL(fileURLWithPath: ".build/debug/replica-node")
}()

/// Loopback port pairs for the processes these tests start (see `LoopbackPorts`).
let TestPorts = LoopbackPorts(range: 20_000..<30_000)

/// What a finished CLI invocation printed and returned.
struct CommandResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs `replica-node ARGS` to completion.
@discardableResult
func replicaNode(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    try runCapturingOutput(replicaNodeBinary.path, arguments, environment: environment)
}

/// Runs `executable ARGS` to completion, `input` (if any) on its standard input, and returns
/// what it printed. `environment` is added to the test runner's.
func runCapturingOutput(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, input: Data? = nil
) throws -> CommandResult {
    ignoringBrokenPipes
    let process = try ChildProcess(executable, arguments, environment: environment, directory: directory?.path,
                                   input: input == nil ? .inherit : .pipe, output: .pipe, errors: .pipe)
    if let input, let handle = process.standardInput {
        // On a thread of its own: a child that prints before it reads all its input must not
        // find both pipes full.
        Thread.detachNewThread {
            try? handle.write(contentsOf: input)
            try? handle.close()
        }
    }
    return collectOutput(of: process)
}

/// A child that stops reading its input (it failed, or needs no more) must not kill the test
/// runner, whose writer thread would get SIGPIPE: the write fails instead. (Children do not
/// inherit this: `ChildProcess` sets every signal back to its default.)
private let ignoringBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

/// Reads a child's standard output and error (both `.pipe`) to their ends and waits for it.
func collectOutput(of process: ChildProcess) -> CommandResult {
    // Standard error on a thread of its own, so that neither stream can fill its pipe and block
    // the child while the other is read to its end.
    let errors = Mutex(Data())
    let errorsRead = DispatchSemaphore(value: 0)
    Thread.detachNewThread { [handle = process.standardError!] in
        let data = handle.readDataToEndOfFile()
        errors.withLock { $0 = data }
        errorsRead.signal()
    }
    let stdout = process.standardOutput!.readDataToEndOfFile()
    errorsRead.wait()
    let status = process.wait().status
    return CommandResult(status: status, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: errors.withLock { $0 }, as: UTF8.self))
}

/// A command left running (`watch`, `serve`, `cluster`), its output read line by line.
/// Killed when released, if still running.
final class RunningCommand: Sendable {
    let process: ChildProcess
    let output: LineReader
    let errors: LineReader

    /// `replica-node ARGS`, or with `executable`, that program.
    init(_ arguments: [String], executable: URL = replicaNodeBinary, directory: URL? = nil, environment: [String: String] = [:]) throws {
        process = try ChildProcess(executable.path, arguments, environment: environment, directory: directory?.path,
                                   output: .pipe, errors: .pipe)
        output = LineReader(process.standardOutput!)
        errors = LineReader(process.standardError!)
    }

    /// Sends `signal` and waits for the exit; returns the exit status (or the signal's number).
    @discardableResult
    func stop(_ signal: Int32 = SIGKILL) -> Int32 {
        process.signal(signal)
        return process.wait().status
    }

    deinit { process.signal(SIGKILL) }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
/// This is awaiting a condition with a deadline, not sleeping for synchronisation.
func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try condition()
}

/// N `replica-node serve` processes on loopback, each peered with all others, each with its own
/// data directory. Stops every process (SIGKILL if needed) and removes the directories on `stop()`.
final class ProcessCluster: @unchecked Sendable {
    struct Node {
        var id: String
        var port: UInt16
        var data: URL
        var log: URL
        var process: ChildProcess?
    }

    let root: URL
    private(set) var nodes: [Node]
    /// Per node id, arguments replacing the default `--insecure` (e.g. `--key`, `--trust`).
    var extraServeArguments: [String: [String]] = [:]

    init(
        size: Int, name: String = "cluster", dataRoot: URL? = nil, startOnly: [Int]? = nil,
        serveArguments: (ProcessCluster) throws -> [String: [String]] = { _ in [:] }
    ) throws {
        let root = (dataRoot ?? FileManager.default.temporaryDirectory).appendingPathComponent("replica-\(name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        self.root = root
        nodes = (1...size).map { index in
            Node(id: "node\(index)", port: TestPorts.pair(),
                 data: root.appendingPathComponent("node\(index)"), log: root.appendingPathComponent("node\(index).log"))
        }
        extraServeArguments = try serveArguments(self)
        for index in startOnly ?? Array(nodes.indices) { try start(index) }
    }

    /// Node indices each node does not peer with (see `restartWithoutPeer`).
    private var excludedPeers: [Int: Swift.Set<Int>] = [:]

    /// Restarts `nodes` (waiting for those still running to stop) without `peer` among their peers.
    func restartWithoutPeer(_ peer: Int, nodes restarted: [Int]) throws {
        for index in restarted {
            if let process = nodes[index].process {
                if process.isRunning { stop(index) } else { process.wait(); nodes[index].process = nil }
            }
            excludedPeers[index, default: []].insert(peer)
            try start(index)
        }
    }

    func arguments(for index: Int) -> [String] {
        let node = nodes[index]
        var arguments = ["serve", "--id", node.id, "--listen", "127.0.0.1:\(node.port)", "--data", node.data.path]
        arguments += extraServeArguments[node.id] ?? ["--insecure"]
        for (other, peer) in nodes.enumerated() where other != index && !(excludedPeers[index]?.contains(other) ?? false) {
            arguments += ["--peer", "\(peer.id)@127.0.0.1:\(peer.port)"]
        }
        return arguments
    }

    func start(_ index: Int) throws {
        let log = open(nodes[index].log.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard log >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(log) }
        nodes[index].process = try ChildProcess(replicaNodeBinary.path, arguments(for: index),
                                                output: .descriptor(log), errors: .descriptor(log))
    }

    /// Node `index` keeps its data at `directory` from its next start (the old one is left).
    func moveData(of index: Int, to directory: URL) {
        nodes[index].data = directory
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status.
    @discardableResult
    func stop(_ index: Int, signal: Int32 = SIGTERM) -> Int32 {
        guard let process = nodes[index].process else { return 0 }
        process.signal(signal)
        nodes[index].process = nil
        return process.wait().status
    }

    func stop() {
        for index in nodes.indices where nodes[index].process != nil { stop(index, signal: SIGKILL) }
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs a client command against node `index`.
    @discardableResult
    func client(_ index: Int, _ arguments: [String]) throws -> CommandResult {
        try replicaNode(arguments + ["--data", nodes[index].data.path])
    }

    /// The node's `status --json`, or nil while it is not answering.
    func status(_ index: Int) throws -> [String: Any]? {
        let result = try client(index, ["status", "--json"])
        guard result.status == 0 else { return nil }
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    }

    /// Waits until every node answers and sees every peer alive.
    func waitUntilConnected(timeout: Duration = .seconds(15)) async throws -> Bool {
        try await eventually(timeout: timeout) {
            try nodes.indices.allSatisfy { index in
                guard let status = try status(index), let peers = status["peers"] as? [[String: Any]] else { return false }
                return peers.count == nodes.count - 1 && peers.allSatisfy { $0["state"] as? String == "alive" }
            }
        }
    }

    func log(_ index: Int) -> String {
        (try? String(contentsOf: nodes[index].log, encoding: .utf8)) ?? ""
    }
}
