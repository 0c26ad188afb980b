import Foundation
import ReplicaCore
import Testing

/// What client commands print, in the user's terms: values as JSON, times as times, changes by
/// register, counter and log element.
@Suite(.serialized) struct UserTermsOutputTests {
    /// `replica-node get KEY --json | jq .value` must give the value itself, not a string
    /// holding JSON: each check parses the output and picks the field, as jq would.
    @Test func getJSONEmbedsJSONValues() async throws {
        let cluster = try ProcessCluster(size: 1, name: "get-json")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let values = [
            "string": #""hello""#, "number": "42.5", "bool": "true", "null": "null",
            "array": "[1, \"two\", [3]]", "object": #"{"dark": true, "size": {"w": 3}}"#,
        ]
        for (key, value) in values { #expect(try cluster.client(0, ["set", key, value]).status == 0) }
        func jq(_ key: String, _ field: String) throws -> Any? {
            let output = try cluster.client(0, ["get", key, "--json"]).stdout
            return try (JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])?[field]
        }
        #expect(try jq("string", "value") as? String == "hello")
        #expect(try jq("number", "value") as? Double == 42.5)
        #expect(try jq("bool", "value") as? Bool == true)
        #expect(try jq("null", "value") is NSNull)
        #expect(try (jq("array", "value") as? [Any])?.count == 3)
        #expect(try ((jq("object", "value") as? [String: Any])?["size"] as? [String: Any])?["w"] as? Int == 3)
        #expect(try jq("object", "encoding") as? String == "json")
        #expect(try jq("object", "node") as? String == "node1")
        let time = try #require(try jq("object", "time") as? String)
        #expect(try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time).timeIntervalSinceNow > -600, "the version's time is a time")

        // Numbers keep their digits (nothing is parsed into a Double and printed back).
        #expect(try cluster.client(0, ["set", "big", "12345678901234567890123"]).status == 0)
        #expect(try cluster.client(0, ["get", "big", "--json"]).stdout.contains(#""value":12345678901234567890123,"#))
        #expect(try cluster.client(0, ["get", "big"]).stdout == "12345678901234567890123\n")
        // Insignificant whitespace is dropped when stored.
        #expect(try cluster.client(0, ["get", "object"]).stdout == #"{"dark":true,"size":{"w":3}}"# + "\n")

        let set = try cluster.client(0, ["set", "greeting", #""hi""#])
        #expect(set.stdout.range(of: #"^OK \d+\.\d+@node1 \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)\n$"#, options: .regularExpression) != nil, "\(set.stdout)")
        let deleted = try cluster.client(0, ["delete", "greeting", "--json"])
        let tombstone = try #require(try JSONSerialization.jsonObject(with: Data(deleted.stdout.utf8)) as? [String: Any])
        #expect(tombstone["removed"] as? Bool == true && tombstone["value"] == nil)
    }

    /// Bytes that are not JSON (a library user's own codec) are shown as base64, marked.
    @Test func getShowsOtherBytesAsBase64() async throws {
        let libraryPort = TestPorts.pair()
        let cluster = try ProcessCluster(size: 1, name: "get-base64") { _ in
            ["node1": ["--insecure", "--peer", "lib@127.0.0.1:\(libraryPort)"]]
        }
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let library = try Replica(ReplicaConfiguration(
            node: "lib", listen: Endpoint(host: "127.0.0.1", port: libraryPort),
            peers: [Endpoint(host: "127.0.0.1", port: cluster.nodes[0].port)], storage: .memory))
        try await library.write("blob", payload: [0xFF, 0x00, 0x01, 0x7B])
        #expect(try await eventually { try cluster.client(0, ["get", "blob"]).status == 0 })
        await library.shutdown()
        #expect(try cluster.client(0, ["get", "blob"]).stdout == "base64:/wABew==\n")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(cluster.client(0, ["get", "blob", "--json"]).stdout.utf8)) as? [String: Any])
        #expect(object["value"] as? String == "/wABew==")
        #expect(object["encoding"] as? String == "base64")
        #expect(object["node"] as? String == "lib")
    }

    /// `watch --json`: one object per change, for a register, a counter and a drink.
    @Test func watchJSONShowsRegistersCountersAndDrinks() async throws {
        let cluster = try ProcessCluster(size: 2, name: "watch-json")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        #expect(try cluster.client(0, ["incr", "visits", "--by", "5"]).status == 0)
        #expect(try await eventually { try cluster.client(1, ["counter", "visits"]).stdout == "5\n" })

        let watcher = try RunningCommand(["watch", "--json", "--data", cluster.nodes[1].data.path])
        #expect(await watcher.errors.next(timeout: .seconds(10))?.hasPrefix("watching everything") == true)
        func next() async throws -> [String: Any] {
            let line = try #require(await watcher.output.next(timeout: .seconds(10)))
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }

        #expect(try cluster.client(0, ["set", "greeting", #"{"text": "hi"}"#]).status == 0)
        let register = try await next()
        #expect(register["type"] as? String == "register")
        #expect(register["key"] as? String == "greeting")
        #expect((register["value"] as? [String: Any])?["text"] as? String == "hi")
        #expect(register["origin"] as? String == "node1")
        #expect(register["node"] as? String == "node1")
        #expect((register["version"] as? String)?.hasSuffix("@node1") == true)
        #expect((register["time"] as? String)?.hasSuffix("Z") == true)

        #expect(try cluster.client(0, ["incr", "visits"]).status == 0)
        let counter = try await next()
        #expect(counter["type"] as? String == "counter")
        #expect(counter["name"] as? String == "visits")
        #expect(counter["delta"] as? Int == 1)
        #expect(counter["total"] as? Int == 6, "the total counts what was there before the watch")
        #expect(try cluster.client(1, ["incr", "visits", "--by", "-2"]).status == 0)
        let local = try await next()
        #expect(local["delta"] as? Int == -2 && local["total"] as? Int == 4 && local["origin"] as? String == "local")

        let id = try cluster.client(0, ["drinks", "add", "--name", "Mocha", "--mg", "90", "--date", "2024-05-01T08:30:00Z"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let added = try await next()
        #expect(added["type"] as? String == "log")
        #expect(added["log"] as? String == "drinks")
        #expect(added["action"] as? String == "added")
        #expect(added["id"] as? String == id)
        let drink = try #require(added["element"] as? [String: Any])
        #expect(drink["name"] as? String == "Mocha" && drink["mg"] as? Int == 90 && drink["date"] as? String == "2024-05-01T08:30:00.000Z")
        #expect(try cluster.client(0, ["drinks", "remove", id]).status == 0)
        let removed = try await next()
        #expect(removed["action"] as? String == "removed")
        #expect((removed["element"] as? [String: Any])?["name"] as? String == "Mocha", "a removal shows what was removed")
    }

    @Test func watchTextNamesWhatChanged() async throws {
        let cluster = try ProcessCluster(size: 1, name: "watch-text")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let watcher = try RunningCommand(["watch", "--data", cluster.nodes[0].data.path])
        #expect(await watcher.errors.next(timeout: .seconds(10)) != nil)
        #expect(try cluster.client(0, ["set", "greeting", #""hi""#]).status == 0)
        #expect(try cluster.client(0, ["incr", "visits", "--by", "3"]).status == 0)
        #expect(try cluster.client(0, ["drinks", "add", "--name", "Mocha", "--mg", "90", "--date", "2024-05-01T08:30:00Z"]).status == 0)
        let stamp = #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  "#
        let version = #"  \(local, version \d+\.\d+@node1\)$"#
        for expected in [#"greeting = "hi""#, "visits \\+3 = 3", "drinks: added Mocha 90 mg at 2024-05-01T08:30:00.000Z"] {
            let line = try #require(await watcher.output.next(timeout: .seconds(10)))
            #expect(line.range(of: stamp + expected + version, options: .regularExpression) != nil, "\(line)")
        }
    }

    @Test func statusAndPeersShowTimesAsTimes() async throws {
        let cluster = try ProcessCluster(size: 2, name: "times")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let peers = try #require(try JSONSerialization.jsonObject(with: Data(cluster.client(0, ["peers", "--json"]).stdout.utf8)) as? [[String: Any]])
        let since = try #require(peers.first?["since"] as? String)
        #expect(try Date.ISO8601FormatStyle().parse(since).timeIntervalSinceNow > -60)
        #expect(peers.first?["missingUpdates"] as? Int == 0)
        let text = try cluster.client(0, ["status"]).stdout
        #expect(text.range(of: #"started +\d{4}-\d\d-\d\dT[\d:.]+Z \(up "#, options: .regularExpression) != nil, "\(text)")
        #expect(text.range(of: #"hlc +\d+\.\d+ \(\d{4}-\d\d-\d\dT[\d:.]+Z\)"#, options: .regularExpression) != nil)
        let time = #"\d{4}-\d\d-\d\dT[\d:.]+Z"#
        #expect(text.range(of: #"node2 +127\.0\.0\.1:\d+ +alive +"# + time + " +" + time + #" \([\d.]+ s ago\)"#, options: .regularExpression) != nil, "\(text)")
    }
}
