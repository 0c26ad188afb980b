import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `replica-node` command line as an operator feels it: how long one client command takes,
/// process start included, and how fast `import` fills a two-node cluster.
enum CLIBench {
    /// Wall time of `replica-node ARGS` from spawn to exit, `runs` times (after 3 warm-ups), in
    /// milliseconds, sorted. Spawned with posix_spawn and waited with waitpid, as hyperfine
    /// does, so the harness adds as little as it can.
    static func commandTimes(_ arguments: [String], runs: Int) throws -> [Double] {
        var times: [Double] = []
        for run in 0..<(runs + 3) {
            let started = ContinuousClock.now
            let status = try spawnAndWait([replicaNodeBinary.path] + arguments)
            let elapsed = ContinuousClock.now - started
            guard status == 0 else { throw BenchError("replica-node \(arguments.joined(separator: " ")) exited with \(status)") }
            if run >= 3 { times.append(elapsed / .milliseconds(1)) }
        }
        return times.sorted()
    }

    private static func spawnAndWait(_ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("posix_spawn failed: \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status >> 8) & 0xFF
    }

    static func roundTrip(runs: Int) throws -> BenchReport.ClientCommands {
        let (port, _) = BenchPair.ports()
        let node = try NodeProcess(id: "cli", port: port, peers: [])
        defer { node.stop() }
        try node.waitUntilServing()
        guard try node.client(["set", "greeting", "\"hello\""]).status == 0 else { throw BenchError("set failed") }
        let version = try commandTimes(["--version"], runs: runs)
        let get = try commandTimes(["get", "greeting", "--data", node.data.path], runs: runs)
        let set = try commandTimes(["set", "greeting", "\"hi\"", "--data", node.data.path], runs: runs)
        func summary(_ times: [Double]) -> BenchReport.ClientCommands.Times {
            .init(medianMillis: times[times.count / 2], p90Millis: times[times.count * 9 / 10])
        }
        return BenchReport.ClientCommands(
            runs: runs, staticallyLinked: isStaticallyLinked(replicaNodeBinary.path),
            version: summary(version), get: summary(get), set: summary(set))
    }

    /// Whether the Swift runtime is linked into the binary (no libswiftCore.so needed).
    static func isStaticallyLinked(_ path: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return data.range(of: Data("libswiftCore.so".utf8)) == nil
    }

    /// `import` of `keys` keys on A, timed until B's digest equals A's.
    static func importRate(keys: Int, payload: Int) throws -> BenchReport.Import {
        let (portA, portB) = BenchPair.ports()
        let a = try NodeProcess(id: "import-a", port: portA, peers: [portB])
        let b = try NodeProcess(id: "import-b", port: portB, peers: [portA])
        defer { a.stop(); b.stop() }
        try a.waitUntilServing()
        try b.waitUntilServing()
        let value = "\"" + String(repeating: "a", count: max(0, payload - 2)) + "\""
        var lines = Data()
        for index in 0..<keys { lines.append(Data("{\"key\":\"key\(index)\",\"value\":\(value)}\n".utf8)) }
        let file = a.data.appendingPathExtension("jsonl")
        try lines.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let started = ContinuousClock.now
        let imported = try node(a, ["import", file.path])
        let importedAt = ContinuousClock.now
        guard imported.hasPrefix("OK \(keys) ") else { throw BenchError("import printed \(imported)") }
        func digest(_ node: NodeProcess) throws -> (String, Int)? {
            let output = try node.client(["status", "--json"]).output
            guard let status = try JSONSerialization.jsonObject(with: output) as? [String: Any] else { return nil }
            return (status["digest"] as? String ?? "", status["liveEntryCount"] as? Int ?? 0)
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            if let onB = try digest(b), onB.1 == keys, let onA = try digest(a), onA.0 == onB.0 { break }
            guard ContinuousClock.now < deadline else { throw BenchError("B did not match A's digest within 120 s") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let converged = ContinuousClock.now
        return BenchReport.Import(
            keys: keys, payloadBytes: payload, importSeconds: (importedAt - started) / .seconds(1),
            convergedSeconds: (converged - started) / .seconds(1))
    }

    private static func node(_ node: NodeProcess, _ arguments: [String]) throws -> String {
        let result = try node.client(arguments)
        guard result.status == 0 else { throw BenchError("replica-node \(arguments.joined(separator: " ")) exited with \(result.status)") }
        return String(decoding: result.output, as: UTF8.self)
    }
}
