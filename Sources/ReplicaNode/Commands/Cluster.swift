import ArgumentParser
import Foundation
import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Start N local nodes on loopback, each peered with all others; Ctrl-C stops them all.",
        discussion: """
            Node K listens on 127.0.0.1:(base-port + 2K) (and the port after it for sync), keeps \
            its data in DIR/nodeK and logs to DIR/nodeK.log. Data survives a restart of the cluster. \
            Nodes authenticate each other with CURVE keys made in DIR/keys on first start; \
            --insecure runs them open instead. It prints commands to try from another terminal, \
            with paths that work from anywhere.

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

    func run() async throws {
        let root = URL(fileURLWithPath: data).standardizedFileURL
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let addresses = (1...nodes).map { "127.0.0.1:\(Int(basePort) + 2 * $0)" }
        let keys = root.appendingPathComponent("keys")
        if !insecure {
            for index in 1...nodes where !FileManager.default.fileExists(atPath: keys.appendingPathComponent("node\(index).key").path) {
                _ = try KeyFiles.write(try CurveKeyPair.generate(), id: "node\(index)", to: keys, force: true)
            }
        }
        var children: [(id: String, process: Process)] = []
        for index in 0..<nodes {
            let id = "node\(index + 1)"
            let directory = root.appendingPathComponent(id)
            var arguments = ["serve", "--id", id, "--listen", addresses[index], "--data", directory.path]
            arguments += insecure ? ["--insecure"] : ["--key", keys.appendingPathComponent("\(id).key").path, "--trust", keys.path]
            for (other, address) in addresses.enumerated() where other != index { arguments += ["--peer", "node\(other + 1)@\(address)"] }
            let logURL = root.appendingPathComponent("\(id).log")
            _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)  // FileHandle below reports a failure
            let log = try FileHandle(forWritingTo: logURL)
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.standardOutput = log
            process.standardError = log
            try process.run()
            children.append((id, process))
        }
        print("Starting \(nodes) node(s) in \(root.path) "
            + (insecure ? "WITHOUT encryption or authentication (--insecure) ..." : "with CURVE keys from \(keys.path) ..."))
        let ready = await waitUntilServing(root: root, ids: children.map(\.id))
        if !ready {
            Output.error("not every node answered within 15 s; see the logs in \(root.path)")
        }
        print("")
        print("NODE    LISTEN            DATA")
        for (index, child) in children.enumerated() {
            print("\(child.id.padding(toLength: 8, withPad: " ", startingAt: 0))\(addresses[index].padding(toLength: 18, withPad: " ", startingAt: 0))\(root.appendingPathComponent(child.id).path)")
        }
        let first = root.appendingPathComponent("node1").path
        let last = root.appendingPathComponent("node\(nodes)").path
        let command = Self.commandName(for: executable)
        print("""

            Try, from another terminal:
              \(command) set greeting '"hello"' --data \(first)
              \(command) get greeting --data \(last)
              \(command) status --data \(last)

            Logs: \(root.path)/nodeK.log. Press Ctrl-C to stop all nodes.
            """)
        Output.flush()  // a reader of a pipe sees the hints now, not at exit
        let signal = await SignalWaiter.waitForTermination()
        print("Stopping \(nodes) node(s) (signal \(signal)) ...")
        for child in children where child.process.isRunning { kill(child.process.processIdentifier, SIGTERM) }
        for child in children { child.process.waitUntilExit() }
        print("Stopped. Data kept in \(root.path).")
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

    /// Waits until every node's control socket answers a status request.
    private func waitUntilServing(root: URL, ids: [String]) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(15)
        var pending = Set(ids)
        while !pending.isEmpty && ContinuousClock.now < deadline {
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
