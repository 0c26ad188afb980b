import Foundation
import ReplicaCore
@testable import ReplicaNode
import Spawn
import Testing

/// The client commands' success and error paths against a real serving node.
@Suite(.serialized) struct ClientCommandTests {
    @Test func errorsAreOneLineOnStderrWithNonZeroExit() async throws {
        let cluster = try ProcessCluster(size: 1, name: "errors")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })

        let unknown = try cluster.client(0, ["get", "missing"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "replica-node: unknown key: missing\n")
        #expect(unknown.stdout.isEmpty)

        let invalid = try cluster.client(0, ["set", "k", "{not json"])
        #expect(invalid.status == 64, "a value that is not JSON is a usage error")
        #expect(invalid.stderr.hasPrefix("replica-node: invalid JSON value"))
        #expect(invalid.stderr.split(separator: "\n").count == 1)

        let notRunning = try replicaNode(["get", "k", "--data", cluster.root.appendingPathComponent("nowhere").path])
        #expect(notRunning.status == 1)
        #expect(notRunning.stderr.hasPrefix("replica-node: no replica-node is serving"))
        #expect(notRunning.stderr.split(separator: "\n").count == 1)

        let badFlag = try replicaNode(["get", "k", "--bogus", "--data", "/nowhere"])
        #expect(badFlag.status == 64)
        #expect(badFlag.stderr == "replica-node: Unknown option '--bogus'\n", "one line, not the usage text")
        let missingData = try replicaNode(["get", "k"], environment: ["REPLICA_DATA": ""])
        #expect(missingData.status == 64)
        #expect(missingData.stderr.hasPrefix("replica-node: Missing --data DIR"))
        #expect(try replicaNode(["set", "\u{1F}counter/x", "1", "--data", "/nowhere"]).status == 64, "reserved keys are refused before connecting")
    }

    /// Keys starting with U+001F are counter slots and log elements: `delete` refuses them as
    /// `set` does (usage error, before connecting), and so does the node, whatever the client.
    @Test func deleteRefusesReservedKeysLikeSet() async throws {
        let cluster = try ProcessCluster(size: 1, name: "delete-reserved")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        #expect(try cluster.client(0, ["incr", "visits", "--by", "3"]).status == 0)
        let shown = try #require(try cluster.client(0, ["keys", "--all"]).stdout.split(separator: "\n").first { $0.hasPrefix("␟counter/visits/") })
        let slot = FamilyKey.marker + shown.dropFirst()
        #expect(FamilyKey.isReserved(slot))
        let exact = try JSONSerialization.jsonObject(with: Data(try cluster.client(0, ["keys", "--all", "--json"]).stdout.utf8)) as? [String]
        #expect(exact?.contains(slot) == true, "--json keeps the key exact, so that a program can pass it back")

        let set = try cluster.client(0, ["set", slot, "1"])
        let delete = try cluster.client(0, ["delete", slot])
        #expect(delete.status == 64)
        #expect(delete.status == set.status)
        #expect(delete.stderr == "replica-node: \(ReservedKey.message)\n")
        #expect(delete.stderr == set.stderr, "the same message as set")
        #expect(try replicaNode(["delete", slot, "--data", "/nowhere"]).status == 64, "refused before connecting")

        // A client that skips the check (another program on the socket) is refused by the node.
        let client = try ControlClient(dataDirectory: cluster.nodes[0].data)
        do {
            _ = try client.call(.delete(key: slot))
            Issue.record("the node deleted a reserved key")
        } catch let failure as ControlFailure {
            #expect(failure.code == .invalidValue)
            #expect(failure.message == ReservedKey.message)
        }
        #expect(try cluster.client(0, ["counter", "visits"]).stdout == "3\n", "the slot is still there")
    }

    /// `health --help` says what `Problem.failsHealth` does: save and load errors are warnings.
    @Test func healthHelpMatchesWhatFailsHealth() throws {
        let date = Date()
        #expect(!Problem(kind: .save, subject: "k", message: "m", since: date).failsHealth)
        #expect(!Problem(kind: .load, subject: "k", message: "m", since: date).failsHealth)
        #expect(Problem(kind: .commit, subject: "store", message: "m", since: date).failsHealth)
        let help = try replicaNode(["health", "--help"], environment: ["COLUMNS": "200"])
        #expect(help.status == 0)
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let parts = text.components(separatedBy: "do not fail")
        try #require(parts.count == 2, "\(text)")
        let failing = try #require(parts[0].components(separatedBy: "Otherwise exit 1").last)
        #expect(!failing.contains("save") && !failing.contains("load"), "save and load errors are not listed as failing: \(failing)")
        #expect(parts[1].contains("save and load errors"), "they are listed as warnings: \(parts[1])")
    }

    @Test func setGetKeysAndStatusWork() async throws {
        let cluster = try ProcessCluster(size: 1, name: "commands")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        #expect(try cluster.client(0, ["set", "config.theme", "{\"dark\":true}"]).stdout.hasPrefix("OK "))
        #expect(try cluster.client(0, ["set", "count", "3"]).status == 0)
        #expect(try cluster.client(0, ["get", "count"]).stdout == "3\n")
        let json = try cluster.client(0, ["get", "config.theme", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["value"] as? [String: Any])?["dark"] as? Bool == true, "a JSON value is embedded as JSON")
        #expect(object["encoding"] as? String == "json")
        #expect(object["node"] as? String == "node1")
        #expect(try cluster.client(0, ["keys"]).stdout == "config.theme\ncount\n")
        #expect(try cluster.client(0, ["keys", "--prefix", "config."]).stdout == "config.theme\n")
        #expect(try cluster.client(0, ["delete", "count"]).status == 0)
        #expect(try cluster.client(0, ["get", "count"]).status == 1)
        let status = try #require(try cluster.status(0))
        #expect(status["id"] as? String == "node1")
        #expect(status["liveEntryCount"] as? Int == 1)
        #expect(status["loadErrors"] as? [Any] != nil)
        #expect(status["saveErrors"] as? [Any] != nil)
        #expect(try cluster.client(0, ["status"]).stdout.contains("digest"))
    }

    @Test func serveExplainsMissingAndInvalidSettings() throws {
        let missing = try replicaNode(["serve"], environment: ["REPLICA_ID": "", "REPLICA_LISTEN": "", "REPLICA_DATA": ""])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("Missing --id"))
        let badListen = try replicaNode(["serve", "--id", "n1", "--listen", "localhost", "--data", "/tmp/x", "--insecure"])
        #expect(badListen.stderr.contains("Invalid --listen"))
        let badID = try replicaNode(["serve", "--id", "no spaces", "--listen", "127.0.0.1:1", "--data", "/tmp/x", "--insecure"])
        #expect(badID.stderr.contains("Invalid --id"))
    }

    /// A key the node would refuse (empty, over the key limit) is a usage error for every
    /// command that takes one, as it is for `import`: exit 64, the limit named, nothing sent
    /// (no node runs on /nowhere). A counter name whose slot keys would be too long likewise.
    @Test func keysOverTheNodesLimitsAreUsageErrors() async throws {
        let limit = ControlEndpoint.replicaLimits.maxKeyBytes
        let long = String(repeating: "k", count: limit + 1)
        let tooLong = "replica-node: invalid key: key of \(limit + 1) bytes exceeds the limit of \(limit)\n"
        let empty = "replica-node: invalid key: it is empty (a key is 1 to \(limit) bytes of UTF-8, without U+0000)\n"
        for (arguments, message) in [
            (["set", long, "1"], tooLong), (["set", "", "1"], empty), (["get", long], tooLong), (["get", ""], empty),
            (["delete", long], tooLong), (["delete", ""], empty),
        ] {
            let result = try replicaNode(arguments + ["--data", "/nowhere"])
            #expect(result.status == 64, "\(arguments.map { $0.prefix(10) }): \(result)")
            #expect(result.stderr == message, "\(arguments.map { $0.prefix(10) })")
        }
        let overhead = FamilyKey.counterSlot("", incarnation: UUID()).utf8.count
        for command in ["incr", "counter"] {
            let result = try replicaNode([command, String(repeating: "c", count: limit - overhead + 1), "--data", "/nowhere"])
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix("replica-node: invalid counter name: its keys would be \(limit + 1) bytes, over the key limit of \(limit)"), "\(result)")
        }

        // At the limit, they work.
        let cluster = try ProcessCluster(size: 1, name: "key-limits")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let longest = String(repeating: "k", count: limit)
        #expect(try cluster.client(0, ["set", longest, "1"]).status == 0)
        #expect(try cluster.client(0, ["get", longest]).stdout == "1\n")
        #expect(try cluster.client(0, ["delete", longest]).status == 0)
        #expect(try cluster.client(0, ["incr", String(repeating: "c", count: limit - overhead)]).stdout == "1\n")
        #expect(try cluster.client(0, ["set", long, "1"]).status == 64, "refused with a node running too")
    }

    /// `set KEY --file FILE` (or `-` for standard input) writes values too large for a command
    /// line, up to the value limit, checked as the positional value is.
    @Test func setReadsTheValueFromAFileOrStandardInput() async throws {
        let cluster = try ProcessCluster(size: 1, name: "set-file")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let limit = ControlEndpoint.replicaLimits.maxPayloadBytes
        let largest = "\"" + String(repeating: "x", count: limit - 2) + "\""
        let file = cluster.root.appendingPathComponent("value.json")
        // Pretty-printed: the whitespace does not count.
        try Data(("  " + largest + "\n\n").utf8).write(to: file)
        let written = try cluster.client(0, ["set", "big", "--file", file.path])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stdout.hasPrefix("OK "))
        #expect(try cluster.client(0, ["get", "big"]).stdout == largest + "\n")

        let piped = try runWithInput(["set", "piped", "--file", "-", "--json", "--data", cluster.nodes[0].data.path], input: "{\"a\": [1, 2]}\n")
        #expect(piped.status == 0, "\(piped)")
        #expect(piped.stdout.contains("\"value\":{\"a\":[1,2]}"), "\(piped)")
        #expect(try cluster.client(0, ["get", "piped"]).stdout == "{\"a\":[1,2]}\n")

        let tooLarge = try runWithInput(["set", "big", "--file", "-", "--data", cluster.nodes[0].data.path], input: "\"" + String(repeating: "y", count: limit - 1) + "\"")
        #expect(tooLarge.status == 64)
        #expect(tooLarge.stderr == "replica-node: value of \(limit + 1) bytes exceeds the limit of \(limit) (without whitespace, read from standard input)\n")
        try Data("{bad".utf8).write(to: file)
        let invalid = try cluster.client(0, ["set", "big", "--file", file.path])
        #expect(invalid.status == 64)
        #expect(invalid.stderr.hasPrefix("replica-node: invalid JSON value in \(file.path): {bad"), "\(invalid)")
        #expect(try cluster.client(0, ["set", "big", "1", "--file", file.path]).status == 64, "not both")
        #expect(try cluster.client(0, ["set", "big"]).status == 64, "one of them")
        let missing = try cluster.client(0, ["set", "big", "--file", "/nonexistent/value.json"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "replica-node: cannot read /nonexistent/value.json: no such file or directory\n")
        #expect(try cluster.client(0, ["get", "big"]).stdout == largest + "\n", "nothing else was written")
        let importMissing = try cluster.client(0, ["import", "/nonexistent.jsonl"])
        #expect(importMissing.status == 1)
        #expect(importMissing.stderr == "replica-node: cannot read /nonexistent.jsonl: no such file or directory\n")
    }

    /// What a client cannot read or write is one line and exit 1 (helper-71): a standard input
    /// that is a directory or closed (it crashed with exit 132), an output on a full disk (exit
    /// 0, nothing written), and a control socket of another user (called "stale": an operator
    /// could delete a live node's socket).
    @Test func unreadableInputUnwritableOutputAndAnotherUsersSocketAreOneLine() async throws {
        let cluster = try ProcessCluster(size: 1, name: "client-io")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let data = cluster.nodes[0].data.path
        func shell(_ command: String) throws -> CommandResult {
            try runCapturingOutput("/bin/sh", ["-c", "exec \(replicaNodeBinary.path) \(command)"])
        }
        for (command, message) in [
            ("set a --file - --data \(data) < /tmp", "cannot read standard input: is a directory"),
            ("set a --file - --data \(data) <&-", "cannot read standard input: it is closed"),
            ("import - --data \(data) <&-", "cannot read standard input: it is closed"),
            ("status --data \(data) > /dev/full", "cannot write standard output: no space left on device"),
        ] {
            let result = try shell(command)
            #expect(result.status == 1 && result.stderr == "replica-node: \(message)\n", "\(command): \(result)")
        }
        #expect(try cluster.client(0, ["get", "a"]).status == 1, "nothing was written")
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else { return }
        // A copy another user can run (the build directory may not be theirs to enter).
        let shared = URL(fileURLWithPath: "/tmp/replica-client-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: shared) }
        let binary = shared.appendingPathComponent("replica-node")
        try FileManager.default.copyItem(at: replicaNodeBinary, to: binary)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        let other = try runCapturingOutput("/usr/sbin/runuser", ["-u", "nobody", "--", binary.path, "status", "--data", data])
        #expect(other.status == 1)
        #expect(other.stderr.hasPrefix("replica-node: cannot reach the replica-node serving \(data): permission denied on its control socket"),
                "\(other)")
    }

    /// An input file that is a pipe (a FIFO, `/dev/stdin`, bash's `<(...)`) is read like any
    /// other: Foundation refused them with a false "permission denied" (helper-75). A directory
    /// is one line.
    @Test func inputFilesThatArePipesAreRead() async throws {
        let cluster = try ProcessCluster(size: 1, name: "client-pipes")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let data = cluster.nodes[0].data.path
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("replica-fifo-\(UUID().uuidString.prefix(8))")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: fifo) }
        func bash(_ command: String) throws -> CommandResult {
            try runCapturingOutput("/bin/bash", ["-c", command])
        }
        let binary = replicaNodeBinary.path
        let substituted = try bash(#"exec \#(binary) import <(printf '{"key":"p1","value":1}\n') --data \#(data)"#)
        #expect(substituted.status == 0, "\(substituted)")
        let devStdin = try bash(#"printf '"two"' | \#(binary) set p2 --file /dev/stdin --data \#(data)"#)
        #expect(devStdin.status == 0, "\(devStdin)")
        let throughFIFO = try bash(#"printf '{"key":"p3","value":3}\n' > \#(fifo.path) & exec \#(binary) import \#(fifo.path) --data \#(data)"#)
        #expect(throughFIFO.status == 0, "\(throughFIFO)")
        for (key, value) in [("p1", "1"), ("p2", "\"two\""), ("p3", "3")] {
            #expect(try cluster.client(0, ["get", key]).stdout == value + "\n", "\(key)")
        }
        let directory = try cluster.client(0, ["import", "/tmp"])
        #expect(directory.status == 1 && directory.stderr == "replica-node: cannot read /tmp: is a directory\n", "\(directory)")
    }

    /// Ctrl-C during an import stops it sending; the batches in flight are answered, and it
    /// says how many keys were written, which the node then holds (it exited 130 saying nothing:
    /// helper-75).
    @Test func anImportInterruptedSaysHowManyKeysWereWritten() async throws {
        let cluster = try ProcessCluster(size: 1, name: "client-import-int")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replica-import-int-\(UUID().uuidString.prefix(8)).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let total = 100_000
        try Data((0..<total).map { #"{"key":"i\#($0)","value":\#($0)}"# + "\n" }.joined().utf8).write(to: file)
        // Batches of 10: 10,000 round trips, so that the signal comes while it sends.
        let command = try RunningCommand(["import", file.path, "--batch", "10", "--data", cluster.nodes[0].data.path])
        #expect(try await eventually(timeout: .seconds(60)) { ((try cluster.status(0)?["entryCount"] as? Int) ?? 0) > 0 })
        command.process.signal(SIGINT)
        let message = await command.errors.next(timeout: .seconds(30)) ?? ""
        #expect(command.process.wait().status == 130)
        let prefix = "replica-node: interrupted (SIGINT); "
        #expect(message.hasPrefix(prefix), "\(message)")
        let written = Int(message.dropFirst(prefix.count).prefix { $0.isNumber }) ?? -1
        #expect(message.dropFirst(prefix.count).hasPrefix("\(written) of \(total) keys were written"), "\(message)")
        #expect(written > 0 && written < total, "\(message)")
        #expect(try cluster.status(0)?["entryCount"] as? Int == written, "the count said is what the node holds")
    }

    /// Start-up failures are one line naming the path or address and the cause, with exit 1,
    /// and leave no data directory behind that the start made.
    @Test func startFailuresNameThePathAndTheCause() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-start-fail-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: root) }
        let keys = root.appendingPathComponent("keys")
        #expect(try replicaNode(["keygen", "--id", "n1", "--out", keys.path]).status == 0)
        // keygen's own failures too (it printed Foundation's whole NSError: helper-62).
        let nowhere = try replicaNode(["keygen", "--id", "n1", "--out", "/proc/nope"])
        #expect(nowhere.status == 1)
        #expect(nowhere.stderr == "replica-node: cannot create directory /proc/nope: no such file or directory\n", "\(nowhere.stderr)")
        let file = root.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let onAFile = try replicaNode(["keygen", "--id", "n1", "--out", file.path])
        #expect(onAFile.stderr == "replica-node: cannot create directory \(file.path): it is a file, not a directory\n", "\(onAFile.stderr)")
        let data = root.appendingPathComponent("new/node1")
        let listen = "127.0.0.1:\(TestPorts.pair())"
        let missingKey = keys.appendingPathComponent("missing.key").path
        for (arguments, message) in [
            (["--key", missingKey, "--trust", keys.path], "cannot read key file \(missingKey): no such file or directory"),
            (["--key", keys.path, "--trust", keys.path], "cannot read key file \(keys.path): is a directory"),
            (["--key", keys.appendingPathComponent("n1.key").path, "--trust", root.appendingPathComponent("none").path],
             "cannot start: trust path \(root.appendingPathComponent("none").path) does not exist"),
        ] {
            let result = try replicaNode(["serve", "--id", "n1", "--listen", listen, "--data", data.path] + arguments)
            #expect(result.status == 1)
            #expect(result.stderr == "replica-node: \(message)\n")
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("new").path), "no data directory made")
        }
        let proc = try replicaNode(["serve", "--id", "n1", "--listen", listen, "--data", "/proc/nope", "--insecure"])
        #expect(proc.status == 1)
        #expect(proc.stderr == "replica-node: cannot create data directory /proc/nope: no such file or directory\n")
    }

    @Test func twoNodesCannotShareADataDirectory() async throws {
        let cluster = try ProcessCluster(size: 1, name: "lock")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let second = try replicaNode(["serve", "--id", "node1", "--listen", "127.0.0.1:\(TestPorts.pair())", "--data", cluster.nodes[0].data.path, "--insecure"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("holds the data directory"), "\(second.stderr)")
    }
}

/// Runs `replica-node ARGS` with `input` on its standard input.
func runWithInput(_ arguments: [String], input: String) throws -> CommandResult {
    try runCapturingOutput(replicaNodeBinary.path, arguments, input: Data(input.utf8))
}
