import Foundation
import Spawn
import Testing

/// Every example in `--help` and in the README runs as shown, against real processes.
///
/// The examples talk to a local cluster started in the current directory (`cluster-data/nodeK`,
/// as `replica-node cluster` and `scripts/demo` make it): each runs in a fresh directory whose
/// `cluster-data/nodeK` are links to this test's nodes, with `replica-node` on PATH. Examples
/// that run until stopped (`serve`, `cluster`, `watch`) are started, awaited until they serve,
/// and stopped with a signal.
@Suite(.serialized) struct HelpExampleTests {
    @Test func everyHelpExampleRunsAsShown() async throws {
        let cluster = try ProcessCluster(size: 3, name: "examples")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        var ran = 0
        for command in try Self.commandPaths() {
            let help = try replicaNode(command + ["--help"], environment: ["COLUMNS": "80"])
            #expect(help.status == 0)
            let examples = Self.examples(inHelp: help.stdout)
            #expect(!examples.isEmpty || command == ["drinks"] || command.isEmpty, "replica-node \(command.joined(separator: " ")) --help has an example")
            let usesCluster = examples.contains { $0.hasPrefix("replica-node cluster") }
            let directory = try Self.workingDirectory(linkingTo: usesCluster ? nil : cluster)
            defer { try? FileManager.default.removeItem(at: directory) }
            for example in examples {
                try await Self.run(example, in: directory, cluster: cluster)
                ran += 1
            }
        }
        #expect(ran >= 30, "every command's examples ran")
    }

    @Test func everyReadmeExampleRunsAsShown() async throws {
        let cluster = try ProcessCluster(size: 3, name: "readme")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let examples = Self.examples(inReadme: readme)
        #expect(examples.count >= 5)
        let directory = try Self.workingDirectory(linkingTo: cluster)
        defer { try? FileManager.default.removeItem(at: directory) }
        for example in examples { try await Self.run(example, in: directory, cluster: cluster) }
    }

    // MARK: Finding the examples

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every command and subcommand, from the SUBCOMMANDS sections of the help.
    static func commandPaths(under parent: [String] = []) throws -> [[String]] {
        let help = try replicaNode(parent + ["--help"], environment: ["COLUMNS": "200"]).stdout
        var paths = [parent]
        var inSection = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("SUBCOMMANDS:") { inSection = true; continue }
            guard inSection else { continue }
            guard line.hasPrefix("  ") && !line.hasPrefix("   ") else {
                if line.isEmpty { inSection = false }
                continue
            }
            guard let name = line.split(separator: " ").first.map(String.init), name != "help" else { continue }
            paths += try commandPaths(under: parent + [name])
        }
        return paths
    }

    /// The command lines under `Example...:` in a help text: indented lines up to a blank one,
    /// a line ending in `\` continued by the next. A line starting at column 0 inside the block
    /// would be an example wrapped by the 80-column help: it fails here, since it would fail
    /// when pasted.
    static func examples(inHelp help: String) -> [String] {
        var examples: [String] = []
        var inBlock = false
        var pending = ""
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Example") { inBlock = true; continue }
            guard inBlock else { continue }
            if line.isEmpty { inBlock = false; continue }
            #expect(line.hasPrefix("  "), "example line wrapped by --help: \(line)")
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasSuffix("\\") {
                pending += text.dropLast() + " "
            } else {
                examples.append(pending + text)
                pending = ""
            }
        }
        return examples
    }

    /// The `replica-node ...` lines of the README's shell blocks.
    static func examples(inReadme readme: String) -> [String] {
        var examples: [String] = []
        var inShell = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inShell = line.hasPrefix("```sh"); continue }
            if inShell && line.hasPrefix("replica-node ") { examples.append(String(line)) }
        }
        return examples
    }

    // MARK: Running them

    static func workingDirectory(linkingTo cluster: ProcessCluster?) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-example-\(UUID().uuidString.prefix(6))")
        let links = directory.appendingPathComponent("cluster-data")
        try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
        for (index, node) in (cluster?.nodes ?? []).enumerated() {
            try FileManager.default.createSymbolicLink(at: links.appendingPathComponent("node\(index + 1)"), withDestinationURL: node.data)
        }
        if cluster == nil { try FileManager.default.removeItem(at: links) }
        return directory
    }

    /// `PATH` with the tested `replica-node` first, and no `REPLICA_DATA` to lean on.
    static var environment: [String: String] {
        ["PATH": replicaNodeBinary.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
         "REPLICA_DATA": ""]
    }

    static let shell = URL(fileURLWithPath: "/bin/sh")

    static func run(_ example: String, in directory: URL, cluster: ProcessCluster) async throws {
        if example.contains("greeting") {
            // Examples read the key the root help's example writes.
            #expect(try cluster.client(0, ["set", "greeting", "\"hello\""]).status == 0)
            #expect(try await eventually { try cluster.nodes.indices.allSatisfy { try cluster.client($0, ["get", "greeting"]).status == 0 } })
        }
        let words = example.split(separator: " ")
        if words.count > 1, words[0] == "replica-node", ["serve", "cluster", "watch"].contains(words[1]) {
            try await runUntilServing(example, kind: String(words[1]), in: directory)
            return
        }
        let result = try runCapturingOutput(shell.path, ["-c", example], environment: environment, directory: directory)
        #expect(result.status == 0, "\(example)\n\(result)")
    }

    /// Starts a command that runs until stopped, waits for the sign that it serves, stops it.
    static func runUntilServing(_ example: String, kind: String, in directory: URL) async throws {
        let command = try RunningCommand(["-c", "exec " + example], executable: shell, directory: directory, environment: environment)
        var serving = false
        switch kind {
        case "serve":
            let words = example.split(separator: " ").map(String.init)
            let data = try #require(words.firstIndex(of: "--data").map { words[$0 + 1] })
            serving = try await eventually(timeout: .seconds(15)) {
                guard command.process.isRunning else { return false }
                return try replicaNode(["status", "--data", directory.appendingPathComponent(data).path]).status == 0
            }
        case "cluster":
            while let line = await command.output.next(timeout: .seconds(30)) {
                if line.contains("Press Ctrl-C") { serving = true; break }
            }
        default:  // watch: its banner says the node accepted the watch
            serving = await command.errors.next(timeout: .seconds(10))?.hasPrefix("watching") == true
        }
        #expect(serving, "\(example) did not start serving")
        // Ctrl-C for the node and the cluster (a graceful stop). A test runner's threads block
        // SIGINT and SIGTERM, and a child inherits that mask, so the watch client (which has no
        // handler of its own to unblock them) is killed instead.
        let status = command.stop(kind == "watch" ? SIGKILL : SIGINT)
        if kind != "watch" { #expect(status == 0, "\(example) stops cleanly on SIGINT") }
    }
}
