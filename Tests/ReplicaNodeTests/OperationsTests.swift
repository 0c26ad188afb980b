import Foundation
import Testing

/// `replica-node` as operators use it: watch, peers, environment twins, signals, bad disks.
@Suite(.serialized) struct OperationsTests {
    @Test func watchPrintsAChangeMadeOnAnotherNode() async throws {
        let cluster = try ProcessCluster(size: 2, name: "watch")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let watcher = Process()
        watcher.executableURL = replicaNodeBinary
        watcher.arguments = ["watch", "greet", "--json", "--data", cluster.nodes[1].data.path]
        let output = Pipe(), banner = Pipe()
        watcher.standardOutput = output
        watcher.standardError = banner
        try watcher.run()
        defer { watcher.terminate() }
        // `watch` prints its banner on stderr once the node has confirmed the subscription.
        let bannerLine = await LineReader(banner.fileHandleForReading).next(timeout: .seconds(10))
        #expect(bannerLine?.hasPrefix("watching keys starting with greet") == true)
        #expect(try cluster.client(0, ["set", "greeting", "\"hi from node1\""]).status == 0)
        let line = try #require(await LineReader(output.fileHandleForReading).next(timeout: .seconds(10)))
        let seen = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        let change = try #require(seen)
        #expect(change["from"] as? String == "node1")
        let entry = try #require(change["entry"] as? [String: Any])
        #expect(entry["key"] as? String == "greeting")
        #expect(entry["value"] as? String == "\"hi from node1\"")
        #expect((entry["version"] as? String)?.hasSuffix("@node1") == true)
    }

    @Test func peersListsEveryPeerWithItsState() async throws {
        let cluster = try ProcessCluster(size: 3, name: "peers")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let text = try cluster.client(0, ["peers"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("node2") && text.stdout.contains("node3") && text.stdout.contains("alive"))
        let json = try cluster.client(0, ["peers", "--json"])
        let peers = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(Set(peers.compactMap { $0["id"] as? String }) == ["node2", "node3"])
    }

    @Test func serveTakesItsSettingsFromTheEnvironment() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-env-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: root) }
        let process = Process()
        process.executableURL = replicaNodeBinary
        process.arguments = ["serve"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "REPLICA_ID": "envnode", "REPLICA_LISTEN": "127.0.0.1:\(TestPorts.pair())",
            "REPLICA_PEERS": "127.0.0.1:\(TestPorts.pair()),127.0.0.1:\(TestPorts.pair())", "REPLICA_DATA": root.path,
            "REPLICA_INSECURE": "1",
        ]) { $1 }
        process.standardError = Pipe()
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let up = try await eventually { try replicaNode(["status", "--json"], environment: ["REPLICA_DATA": root.path]).status == 0 }
        #expect(up)
        let status = try replicaNode(["status", "--json"], environment: ["REPLICA_DATA": root.path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(json["id"] as? String == "envnode")
        // Both seeds are unreachable: the node keeps asking them to let it join.
        #expect((json["pendingSeeds"] as? [Any])?.count == 2)
        #expect((json["peers"] as? [Any])?.count == 0)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "SIGTERM is a graceful stop")
    }

    @Test func aSecondSignalExitsAtOnce() async throws {
        let cluster = try ProcessCluster(size: 1, name: "signals")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let process = try #require(cluster.nodes[0].process)
        // Both signals arrive before the graceful path can finish: the second wins with 130,
        // or the first already finished with 0. Either way the node is gone promptly.
        kill(process.processIdentifier, SIGINT)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect([0, 130].contains(process.terminationStatus))
    }

    /// kill -9 leaves recent commits in the WAL; then the first page is damaged. The database, its
    /// WAL and SHM must be kept exactly as they were (no checkpoint into the damaged file, no WAL
    /// deleted), reported, and a fresh database must take over.
    @Test func aCorruptDatabaseIsKeptByteForByteAndReported() async throws {
        let cluster = try ProcessCluster(size: 1, name: "corrupt")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        for key in 0..<20 { #expect(try cluster.client(0, ["set", "k\(key)", "\(key)"]).status == 0) }
        cluster.stop(0, signal: SIGKILL)
        let data = cluster.nodes[0].data
        let database = data.appendingPathComponent("replica.sqlite")
        #expect(FileManager.default.fileExists(atPath: database.path + "-wal"), "kill -9 left a WAL")
        let handle = try FileHandle(forWritingTo: database)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 4096))  // the first page
        try handle.close()
        var before: [String: Data] = [:]
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: database.path + suffix) {
            before[suffix] = try Data(contentsOf: URL(fileURLWithPath: database.path + suffix))
        }
        try cluster.start(0)
        #expect(try await eventually { try cluster.status(0) != nil }, "\(cluster.log(0))")
        let status = try #require(try cluster.status(0))
        let loadErrors = try #require(status["loadErrors"] as? [[String: Any]])
        #expect(loadErrors.count == 1)
        let message = try #require(loadErrors.first?["message"] as? String)
        #expect(message.contains("kept as it was"), "\(message)")
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: data.path)
            .first { $0.hasPrefix("replica.sqlite.corrupt-") && !$0.hasSuffix("-shm") && !$0.hasSuffix("-wal") })
        for (suffix, bytes) in before {
            let copy = try Data(contentsOf: data.appendingPathComponent(kept + suffix))
            #expect(SHA256Digest(copy) == SHA256Digest(bytes), "replica.sqlite\(suffix) changed")
        }
        #expect(try cluster.client(0, ["set", "k", "2"]).status == 0, "a fresh database works")
    }

    /// Two processes on one data directory would lose increments: the second is refused, and
    /// told which process holds it.
    @Test func aSecondProcessOnADataDirectoryIsRefused() async throws {
        let cluster = try ProcessCluster(size: 1, name: "twice")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let pid = try #require(cluster.nodes[0].process?.processIdentifier)
        let second = try replicaNode(["serve", "--id", "node1", "--listen", "127.0.0.1:\(TestPorts.pair())", "--insecure",
                                      "--data", cluster.nodes[0].data.path])
        #expect(second.status == 1)
        #expect(second.stderr.contains("process \(pid) holds the data directory"), "\(second.stderr)")
    }

    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDataDirectoryFailsWritesVisiblyAndRecovers() async throws {
        let mount = FileManager.default.temporaryDirectory.appendingPathComponent("replica-full-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        #expect(try replicaNodeShell("/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount.path]) == 0)
        defer {
            _ = try? replicaNodeShell("/bin/umount", ["-l", mount.path])
            try? FileManager.default.removeItem(at: mount)
        }
        let cluster = try ProcessCluster(size: 1, name: "full", dataRoot: mount)
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        #expect(try cluster.client(0, ["set", "before", "1"]).status == 0)

        let filler = mount.appendingPathComponent("filler")
        _ = try? replicaNodeShell("/bin/dd", ["if=/dev/zero", "of=\(filler.path)", "bs=64k", "status=none"])
        let big = "\"" + String(repeating: "x", count: 100_000) + "\""
        let failed = try cluster.client(0, ["set", "big", big])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("could not save big") && failed.stderr.contains("full"), "\(failed.stderr)")
        let status = try #require(try cluster.status(0))
        let saveErrors = try #require(status["saveErrors"] as? [[String: Any]])
        #expect(saveErrors.first?["subject"] as? String == "big")
        #expect(try cluster.client(0, ["get", "before"]).stdout == "1\n", "reads keep working")

        try FileManager.default.removeItem(at: filler)
        #expect(try cluster.client(0, ["set", "big", big]).status == 0)
        let after = try #require(try cluster.status(0))
        #expect((after["saveErrors"] as? [Any])?.isEmpty == true, "the error clears")
    }
}

/// A SHA-256 of `data` (through /usr/bin/sha256sum), to compare files byte for byte.
func SHA256Digest(_ data: Data) -> String {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("replica-hash-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: file) }
    try? data.write(to: file)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [file.path]
    let out = Pipe()
    process.standardOutput = out
    try? process.run()
    let text = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: text, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

/// Runs a system command and returns its exit status.
func replicaNodeShell(_ path: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardError = Pipe()
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// Reads lines from a pipe without blocking the test's executor.
final class LineReader: @unchecked Sendable {
    private let stream: AsyncStream<String>
    private var iterator: AsyncStream<String>.Iterator

    init(_ handle: FileHandle) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                buffer.append(data)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            continuation.finish()
        }
        self.stream = stream
        iterator = stream.makeAsyncIterator()
    }

    /// The next line, or nil after `timeout` (a timed-out reader is finished).
    func next(timeout: Duration) async -> String? {
        await withTaskGroup(of: String?.self) { group in
            group.addTask { [self] in await self.iterator.next() }
            group.addTask { try? await Task.sleep(for: timeout); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
