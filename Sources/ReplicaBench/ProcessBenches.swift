import Foundation
import Spawn

/// The `replica-node` binary next to this one.
let replicaNodeBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    .deletingLastPathComponent().appendingPathComponent("replica-node")

/// A `replica-node serve --insecure` process in a temporary directory.
final class NodeProcess {
    let process: ChildProcess
    let data: URL
    let port: UInt16

    init(id: String, port: UInt16, peers: [UInt16]) throws {
        guard FileManager.default.isExecutableFile(atPath: replicaNodeBinary.path) else {
            throw BenchError("\(replicaNodeBinary.path) not found: build replica-node too")
        }
        self.port = port
        data = FileManager.default.temporaryDirectory.appendingPathComponent("replica-bench-\(id)-\(UUID().uuidString.prefix(6))")
        process = try ChildProcess(
            replicaNodeBinary.path,
            ["serve", "--id", id, "--listen", "127.0.0.1:\(port)", "--data", data.path, "--insecure", "--log-level", "error"]
                + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] },
            errors: .null)
    }

    func client(_ arguments: [String], input: Data? = nil) throws -> (status: Int32, output: Data) {
        var stdin: FileHandle?
        if let input {
            let file = data.appendingPathExtension("input")
            try input.write(to: file)
            stdin = try FileHandle(forReadingFrom: file)
        }
        let client = try withExtendedLifetime(stdin) {
            try ChildProcess(replicaNodeBinary.path, arguments + ["--data", data.path],
                             input: stdin.map { .descriptor($0.fileDescriptor) } ?? .inherit, output: .pipe, errors: .null)
        }
        let output = client.standardOutput!.readDataToEndOfFile()
        return (client.wait().status, output)
    }

    func waitUntilServing() throws {
        let deadline = Date().addingTimeInterval(20)
        while try client(["status"]).status != 0 {
            guard Date() < deadline else { throw BenchError("replica-node did not start") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func stop() {
        process.signal(SIGCONT)
        process.signal(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(at: data)
        try? FileManager.default.removeItem(at: data.appendingPathExtension("input"))
    }
}

/// Resident size of a node process holding `keys` keys of `payload` bytes (VmRSS).
enum MemoryBench {
    static func run(keys: Int, payload: Int) throws -> BenchReport.Memory {
        let (port, _) = BenchPair.ports()
        let node = try NodeProcess(id: "mem", port: port, peers: [])
        defer { node.stop() }
        try node.waitUntilServing()
        let value = "\"" + String(repeating: "a", count: max(0, payload - 2)) + "\""
        var lines = Data()
        for index in 0..<keys { lines.append(Data("{\"key\":\"key\(index)\",\"value\":\(value)}\n".utf8)) }
        guard try node.client(["import", "-"], input: lines).status == 0 else { throw BenchError("import failed") }
        let status = try String(contentsOfFile: "/proc/\(node.process.processIdentifier)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        return BenchReport.Memory(keys: keys, payloadBytes: payload, residentMegabytes: kilobytes / 1024)
    }
}

/// Time from a peer's SIGSTOP until the other node reports it suspect, then down.
enum FailureDetectionBench {
    static func run() throws -> BenchReport.FailureDetection {
        let (portA, portB) = BenchPair.ports()
        let a = try NodeProcess(id: "watcher", port: portA, peers: [portB])
        let b = try NodeProcess(id: "victim", port: portB, peers: [portA])
        defer { a.stop(); b.stop() }
        try a.waitUntilServing()
        try b.waitUntilServing()
        func state() throws -> String? {
            let output = try a.client(["peers", "--json"]).output
            let peers = try JSONSerialization.jsonObject(with: output) as? [[String: Any]]
            return peers?.first?["state"] as? String
        }
        let deadline = Date().addingTimeInterval(20)
        while try state() != "alive" {
            guard Date() < deadline else { throw BenchError("peers never became alive") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(b.process.processIdentifier, SIGSTOP)
        let stopped = ContinuousClock.now
        var suspect: Duration?
        while true {
            let current = try state()
            if current == "suspect" && suspect == nil { suspect = ContinuousClock.now - stopped }
            if current == "down" { break }
            guard ContinuousClock.now - stopped < .seconds(20) else { throw BenchError("peer never went down") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let down = ContinuousClock.now - stopped
        return BenchReport.FailureDetection(suspectSeconds: (suspect ?? down) / .seconds(1), downSeconds: down / .seconds(1))
    }
}
