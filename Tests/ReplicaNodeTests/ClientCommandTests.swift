import Foundation
import ReplicaCore
@testable import ReplicaNode
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

    @Test func twoNodesCannotShareADataDirectory() async throws {
        let cluster = try ProcessCluster(size: 1, name: "lock")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let second = try replicaNode(["serve", "--id", "node1", "--listen", "127.0.0.1:\(TestPorts.pair())", "--data", cluster.nodes[0].data.path, "--insecure"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("holds the data directory"), "\(second.stderr)")
    }
}
