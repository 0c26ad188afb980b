import Foundation
import ReplicaCore
@testable import ReplicaNode
import Spawn
import Testing

/// `replica-node` as operators use it: watch, peers, environment twins, signals, bad disks.
@Suite(.serialized) struct OperationsTests {
    @Test func watchPrintsAChangeMadeOnAnotherNode() async throws {
        let cluster = try ProcessCluster(size: 2, name: "watch")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let watcher = try RunningCommand(["watch", "greet", "--json", "--data", cluster.nodes[1].data.path])
        // `watch` prints its banner on stderr once the node has confirmed the subscription.
        let bannerLine = await watcher.errors.next(timeout: .seconds(10))
        #expect(bannerLine?.hasPrefix("watching what starts with greet") == true)
        #expect(try cluster.client(0, ["set", "greeting", "\"hi from node1\""]).status == 0)
        let line = try #require(await watcher.output.next(timeout: .seconds(10)))
        let seen = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        let change = try #require(seen)
        #expect(change["origin"] as? String == "node1")
        #expect(change["type"] as? String == "register")
        #expect(change["key"] as? String == "greeting")
        #expect(change["value"] as? String == "hi from node1")
        #expect((change["version"] as? String)?.hasSuffix("@node1") == true)
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
        // Times in JSON are to the millisecond, as in text: `peers --json` and `status --json`.
        let statusPeers = try #require(try cluster.status(0)?["peers"] as? [[String: Any]])
        for peer in peers + statusPeers {
            let since = try #require(peer["since"] as? String)
            #expect(since.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(since)")
        }
    }

    /// Every date the CLI prints in JSON through its encoder (status, peers, health, problems)
    /// is ISO 8601 in UTC with milliseconds.
    @Test func jsonDatesHaveMilliseconds() throws {
        let since = Date(timeIntervalSince1970: 1_795_476_966.123)
        let problem = Problem(kind: .commit, subject: "store", message: "m", since: since, last: since.addingTimeInterval(0.004))
        let text = String(decoding: try Output.encoded([problem]), as: UTF8.self)
        #expect(text.contains("\"since\":\"2026-11-23T23:36:06.123Z\""), "\(text)")
        #expect(text.contains("\"last\":\"2026-11-23T23:36:06.127Z\""), "\(text)")
    }

    @Test func serveTakesItsSettingsFromTheEnvironment() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-env-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: root) }
        let process = try ChildProcess(replicaNodeBinary.path, ["serve"], environment: [
            "REPLICA_ID": "envnode", "REPLICA_LISTEN": "127.0.0.1:\(TestPorts.pair())",
            "REPLICA_PEERS": "127.0.0.1:\(TestPorts.pair()),127.0.0.1:\(TestPorts.pair())", "REPLICA_DATA": root.path,
            "REPLICA_INSECURE": "1",
        ], errors: .null)
        defer { process.signal(SIGKILL) }
        let up = try await eventually { try replicaNode(["status", "--json"], environment: ["REPLICA_DATA": root.path]).status == 0 }
        #expect(up)
        let status = try replicaNode(["status", "--json"], environment: ["REPLICA_DATA": root.path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(json["id"] as? String == "envnode")
        // Both seeds are unreachable: the node keeps asking them to let it join.
        #expect((json["pendingSeeds"] as? [Any])?.count == 2)
        #expect((json["peers"] as? [Any])?.count == 0)
        process.signal(SIGTERM)
        #expect(process.wait() == .exited(0), "SIGTERM is a graceful stop")
    }

    /// A node whose writes no member holds does not leave (an outside tester's case: `leave`
    /// printed OK and exited 0 while no member had the node's last writes): `leave` exits 1
    /// saying so, the node keeps serving its data, and `--force` leaves anyway.
    @Test func aLeaveThatWouldStrandWritesIsRefusedUnlessForced() async throws {
        let cluster = try ProcessCluster(size: 1, name: "leave-alone")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        #expect(try cluster.client(0, ["set", "only-here", "1"]).status == 0)
        let refused = try cluster.client(0, ["leave"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("not left: no member confirmed holding the 1 update(s)"), "\(refused)")
        #expect(refused.stderr.contains("no member is alive") && refused.stderr.contains("--force"), "\(refused)")
        #expect(try cluster.client(0, ["get", "only-here"]).stdout == "1\n", "still serving")
        #expect(try cluster.client(0, ["set", "after", "2"]).status == 0, "and writing")
        let refusedJSON = try cluster.client(0, ["leave", "--json"])
        #expect(refusedJSON.status == 1 && refusedJSON.stdout.contains("\"left\":false"), "\(refusedJSON)")
        #expect(refusedJSON.stderr.contains("not left: no member confirmed holding the 2 update(s)"), "the reason too: \(refusedJSON)")

        // The node's process as this one numbers it, from the control socket's peer (what
        // `leave` waits for; the pid in the lock file is the node's own namespace's).
        #expect(try ControlClient(dataDirectory: cluster.nodes[0].data).nodePID == cluster.nodes[0].process?.processIdentifier)
        let forced = try cluster.client(0, ["leave", "--force", "--json"])
        #expect(forced.status == 0, "\(forced)")
        #expect(forced.stdout.contains("\"left\":true"), "\(forced)")
        // `leave` returned once the node let its data directory go and its process ended (a
        // zombie: this test reaps it only below): a restart may follow at once.
        #expect(DataDirectoryLock.probe(directory: cluster.nodes[0].data) == .free)
        let pid = try #require(cluster.nodes[0].process?.processIdentifier)
        #expect(Leave.hasEnded(pid), "ended, not yet reaped")
        #expect(!Leave.hasEnded(getpid()))
        let process = try #require(cluster.nodes[0].process)
        #expect(process.wait() == .exited(0))
    }

    @Test func aSecondSignalExitsAtOnce() async throws {
        let cluster = try ProcessCluster(size: 1, name: "signals")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let process = try #require(cluster.nodes[0].process)
        // Both signals arrive before the graceful path can finish: the second wins with 130,
        // or the first already finished with 0. Either way the node is gone promptly.
        process.signal(SIGINT)
        process.signal(SIGINT)
        #expect([.exited(0), .exited(130)].contains(process.wait()))
    }

    /// A copy of a running node's data directory, started next to it (an outside tester's case:
    /// both took increments into one counter slot, increments were lost, and every node stayed
    /// healthy). The two keep replacing each other's member record; now that is an `identity`
    /// problem: health fails, and writes are refused with the reason.
    @Test func aCopiedDataDirectoryStartedNextToItsOriginalIsAnIdentityProblem() async throws {
        let cluster = try ProcessCluster(size: 2, name: "clash")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.client(1, ["set", "before", "1"]).status == 0 })
        let copy = cluster.root.appendingPathComponent("node2-copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: cluster.nodes[1].data.path) where name.hasPrefix("replica.sqlite") {
            try FileManager.default.copyItem(at: cluster.nodes[1].data.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        let twin = try RunningCommand([
            "serve", "--id", "node2", "--listen", "127.0.0.1:\(TestPorts.pair())", "--insecure", "--data", copy.path,
            "--peer", "node1@127.0.0.1:\(cluster.nodes[0].port)",
        ])
        defer { twin.stop() }
        func clash(_ data: URL) throws -> Bool {
            let status = try replicaNode(["status", "--json", "--data", data.path])
            guard status.status == 0, let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] else { return false }
            return (json["problems"] as? [[String: Any]] ?? []).contains { $0["kind"] as? String == "identity" }
        }
        #expect(try await eventually(timeout: .seconds(30)) { try clash(cluster.nodes[1].data) || clash(copy) }, "the clash is listed")
        let listed = try clash(cluster.nodes[1].data) ? cluster.nodes[1].data : copy
        #expect(try replicaNode(["health", "--data", listed.path]).status != 0, "health fails")
        let increment = try replicaNode(["incr", "visits", "--data", listed.path])
        #expect(increment.status == 1)
        #expect(increment.stderr.contains("another process uses this node's id"), "\(increment.stderr)")
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

    /// `leave` returns once the node let its data directory go (an outside tester's node still
    /// ran a second after `leave` said it stops), seen by probing the lock without taking it or
    /// writing to it: a held lock names its holder, a let-go one is free at once, and a
    /// directory without a lock file is free and stays without one.
    @Test func theLockIsProbedWithoutBeingTaken() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-leave-wait-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let lockFile = directory.appendingPathComponent("lock")
        #expect(DataDirectoryLock.probe(directory: directory) == .free)
        #expect(!FileManager.default.fileExists(atPath: lockFile.path), "the probe makes no lock file")
        var lock: DataDirectoryLock? = try DataDirectoryLock(directory: directory)
        #expect(lock != nil && DataDirectoryLock.probe(directory: directory) == .held(pid: getpid()))
        let written = try Data(contentsOf: lockFile)
        lock = nil
        #expect(DataDirectoryLock.probe(directory: directory) == .free)
        #expect(try Data(contentsOf: lockFile) == written, "nor writes to it")
    }

    /// What `leave` says it saw, from each state of the directory's lock and the node's process:
    /// a held lock is not seen to stop; a free one with the process still running is "closed
    /// its store"; a process ended (a zombie not reaped yet counts) or process 1 (the node as a
    /// container's first process: its end would kill `leave` too) is "stopped"; a lock that
    /// cannot be probed leaves it to the control socket.
    @Test func leaveTellsHowFarTheNodeWasSeenToStop() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-stop-seen-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let brief: Duration = .milliseconds(200)
        func seen(_ pid: Int32?, serving: Bool = true) -> Leave.StopSeen {
            Leave.waitForStop(directory: directory, pid: pid, within: brief) { _ in !serving }
        }
        var lock: DataDirectoryLock? = try DataDirectoryLock(directory: directory)
        #expect(seen(nil) == .notSeen, "the lock is held")
        lock = nil
        #expect(lock == nil)

        let running = Process()
        running.executableURL = URL(fileURLWithPath: "/bin/sleep")
        running.arguments = ["30"]
        try running.run()
        defer { if running.isRunning { running.terminate() } }
        #expect(seen(running.processIdentifier) == .storeClosed(pid: running.processIdentifier))
        #expect(seen(nil) == .stopped && seen(1) == .stopped && seen(getpid()) == .stopped, "nothing to wait for")

        // A child that exited and is not reaped: a zombie, ended.
        var zombie: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&zombie, "/bin/true", nil, nil, argv, nil) == 0)
        #expect(await eventually(timeout: .seconds(5)) { Leave.hasEnded(zombie) })
        #expect(seen(zombie) == .stopped)
        var status: Int32 = 0
        _ = waitpid(zombie, &status, 0)

        // A lock file that cannot be opened (a link to itself here; another user's, in life).
        let lockFile = directory.appendingPathComponent("lock").path
        try FileManager.default.removeItem(atPath: lockFile)
        try FileManager.default.createSymbolicLink(atPath: lockFile, withDestinationPath: "lock")
        #expect(DataDirectoryLock.probe(directory: directory) == .unknown)
        #expect(seen(running.processIdentifier, serving: false) == .stopped)
        #expect(seen(running.processIdentifier, serving: true) == .notSeen)
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

    /// A data directory whose store files can be written but where no file can be made (its
    /// permissions, a read-only mount: here the directory is mounted read-only, its files
    /// read-write) refuses the control socket: the error says what to do, as the store's do
    /// (it was libzmq's "bind ipc://...: Read-only file system").
    @Test(.enabled(if: getuid() == 0, "bind mounts need root"))
    func aControlSocketThatCannotBeMadeSaysWhatToDo() async throws {
        let cluster = try ProcessCluster(size: 1, name: "rosock")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        cluster.stop(0)
        let data = cluster.nodes[0].data.path
        let files = try FileManager.default.contentsOfDirectory(atPath: data).map { data + "/" + $0 }
        var mounted: [String] = []
        defer { for path in mounted.reversed() { _ = try? replicaNodeShell("/bin/umount", [path]) } }
        for (path, mode) in [(data, "remount,ro,bind")] + files.map({ ($0, "remount,rw,bind") }) {
            #expect(try replicaNodeShell("/bin/mount", ["--bind", path, path]) == 0)
            mounted.append(path)
            #expect(try replicaNodeShell("/bin/mount", ["-o", mode, path]) == 0)
        }
        let result = try replicaNode(["serve", "--id", "node1", "--listen", "127.0.0.1:\(TestPorts.pair())", "--insecure", "--data", data])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot create the control socket \(data)/control.sock: Read-only file system; "
            + "make the data directory writable"), "\(result.stderr)")
    }

    /// node2's data directory is on a small tmpfs that fills up while node1 writes: node2's
    /// replicated commits fail, and that is visible (health exits 1, status lists the problem),
    /// retried with back-off (little CPU), and its local writes fail properly; once space is free,
    /// node2 catches up by itself and is healthy again.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskUnderReplicatedTrafficIsVisibleBoundedAndRecovers() async throws {
        let mount = FileManager.default.temporaryDirectory.appendingPathComponent("replica-full-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        #expect(try replicaNodeShell("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount.path]) == 0)
        defer {
            _ = try? replicaNodeShell("/bin/umount", ["-l", mount.path])
            try? FileManager.default.removeItem(at: mount)
        }
        let cluster = try ProcessCluster(size: 2, name: "full") { cluster in [:] }
        defer { cluster.stop() }
        // node2 again, with its data on the small disk.
        cluster.stop(1)
        cluster.moveData(of: 1, to: mount.appendingPathComponent("node2"))
        try cluster.start(1)
        #expect(try await cluster.waitUntilConnected())
        #expect(try cluster.client(0, ["set", "before", "1"]).status == 0)
        #expect(try await eventually { try cluster.client(1, ["get", "before"]).status == 0 })
        #expect(try cluster.client(1, ["health"]).status == 0, "healthy to begin with")

        let filler = mount.appendingPathComponent("filler")
        _ = try? replicaNodeShell("/bin/dd", ["if=/dev/zero", "of=\(filler.path)", "bs=64k", "status=none"])
        // Told before any commit fails: the disk has no room for a large one (since 0.32.0).
        #expect(try await eventually(timeout: .seconds(10)) {
            let health = try cluster.client(1, ["health"])
            return health.status == 1 && health.stdout.contains("commit store: the disk has")
        }, "a full disk fails health before a commit fails")
        let value = "\"" + String(repeating: "x", count: 20_000) + "\""
        var written = 0
        let failing = try await eventually(timeout: .seconds(20)) {
            written += 1
            #expect(try cluster.client(0, ["set", "during\(written)", value]).status == 0)
            return try cluster.client(1, ["health"]).stdout.contains("commit store: commits fail")
        }
        #expect(failing, "node2's failing commits show in health")
        let health = try cluster.client(1, ["health"])
        #expect(health.stdout.contains("commit store: commits fail"), "\(health)")
        let status = try #require(try cluster.status(1))
        let problems = try #require(status["problems"] as? [[String: Any]])
        #expect(problems.contains { $0["kind"] as? String == "commit" && ($0["count"] as? Int ?? 0) >= 1 }, "\(problems)")

        // Back-off: a full disk costs little CPU, however much keeps arriving.
        let pid = try #require(cluster.nodes[1].process?.processIdentifier)
        let before = try cpuSeconds(of: pid)
        for index in 0..<20 { _ = try cluster.client(0, ["set", "more\(index)", value]) }
        try await Task.sleep(for: .seconds(3))
        let spent = try cpuSeconds(of: pid) - before
        #expect(spent < 1.0, "node2 spent \(spent) CPU-s in 3 s on a full disk")

        // Its own writes fail, and say so (one may still fit in the WAL's reusable space).
        var refused: CommandResult?
        for index in 0..<20 {
            let result = try cluster.client(1, ["set", "local\(index)", value])
            if result.status != 0 { refused = result; break }
        }
        let refusal = try #require(refused, "a local write on the full disk must fail")
        #expect(refusal.status == 1 && refusal.stderr.contains("could not save") && refusal.stderr.contains("full"), "\(refusal)")

        try FileManager.default.removeItem(at: filler)
        #expect(try await eventually(timeout: .seconds(20)) {
            try cluster.client(1, ["get", "more19"]).status == 0 && cluster.client(1, ["health"]).status == 0
        }, "node2 catches up by itself once space is free:\n\(cluster.log(1).suffix(3000))")
        #expect(try cluster.client(1, ["set", "after", "1"]).status == 0)
        let after = try #require(try cluster.status(1))
        #expect((after["saveErrors"] as? [Any])?.isEmpty == true, "the errors clear")
    }

    @Test func healthIsZeroOnlyForAServingHealthyNode() async throws {
        let cluster = try ProcessCluster(size: 1, name: "health")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let healthy = try cluster.client(0, ["health"])
        #expect(healthy.status == 0 && healthy.stdout == "healthy\n", "\(healthy)")
        let json = try cluster.client(0, ["health", "--json"])
        #expect(json.stdout.contains("\"healthy\":true"), "\(json)")
        cluster.stop(0)
        let stopped = try cluster.client(0, ["health"])
        #expect(stopped.status == 1 && stopped.stderr.contains("no replica-node is serving"), "\(stopped)")
    }
}

/// User plus system CPU seconds a process has used (from /proc).
func cpuSeconds(of pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    return Double(Int(fields[11])! + Int(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A SHA-256 of `data` (through /usr/bin/sha256sum), to compare files byte for byte.
func SHA256Digest(_ data: Data) -> String {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("replica-hash-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: file) }
    try? data.write(to: file)
    let text = (try? runCapturingOutput("/usr/bin/sha256sum", [file.path]))?.stdout ?? ""
    return text.split(separator: " ").first.map(String.init) ?? ""
}

/// Runs a system command and returns its exit status.
func replicaNodeShell(_ path: String, _ arguments: [String]) throws -> Int32 {
    try ChildProcess(path, arguments, errors: .null).wait().status
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
