import Foundation
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
        #expect(invalid.status != 0)
        #expect(invalid.stderr.contains("invalid JSON value"))

        let notRunning = try replicaNode(["get", "k", "--data", cluster.root.appendingPathComponent("nowhere").path])
        #expect(notRunning.status == 1)
        #expect(notRunning.stderr.hasPrefix("replica-node: no replica-node is serving"))
        #expect(notRunning.stderr.split(separator: "\n").count == 1)

        let badFlag = try replicaNode(["get", "k", "--bogus"])
        #expect(badFlag.status == 64)
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
        #expect(object["value"] as? String == "{\"dark\":true}")
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
