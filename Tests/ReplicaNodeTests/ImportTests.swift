import Foundation
import ReplicaCore
@testable import ReplicaNode
import Spawn
import Testing

/// `import`: every line checked before anything is written, batches in flight, last line wins.
@Suite(.serialized) struct ImportTests {
    @Test func aBadLineWritesNothingAndNamesTheLine() async throws {
        let cluster = try ProcessCluster(size: 1, name: "import-bad")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let file = cluster.root.appendingPathComponent("bad.jsonl")
        let cases = [
            ("{\"key\":\"a\",\"value\":1}\n\n{\"key\":\"b\",\"value\":[1,}\n", "line 3: not a JSON object"),
            ("{\"key\":\"a\",\"value\":1}\n{\"key\":\"b\"}\n", "line 2: missing \"value\""),
            ("{\"key\":7,\"value\":1}\n", "line 1: \"key\" must be a string"),
            ("{\"key\":\"\",\"value\":1}\n", "line 1: \"key\" is empty"),
            ("{\"value\":1}\n", "line 1: missing \"key\""),
            ("\u{FEFF}{\"key\":\"a\",\"value\":1}\n", "line 1: the file starts with a UTF-8 byte order mark"),
            ("[1,2]\n", "line 1: not a JSON object"),
            ("{\"key\":\"a\",\"value\":1,\"key\":\"b\"}\n", "line 1: \"key\" appears twice in the object"),
            ("{\"key\":\"a\",\"value\":1,\"value\":2}\n", "line 1: \"value\" appears twice in the object"),
            ("{\"key\":\"\\u001Fcounter/x/y\",\"value\":1}\n", "line 1: keys starting with U+001F are reserved"),
        ]
        for (text, message) in cases {
            try Data(text.utf8).write(to: file)
            let result = try cluster.client(0, ["import", file.path])
            #expect(result.status == 64, "bad input is a usage error")
            #expect(result.stderr.hasPrefix("replica-node: \(message)"), "\(result.stderr)")
            #expect(result.stderr.hasSuffix("; nothing was written\n"))
            #expect(try cluster.client(0, ["keys"]).stdout.isEmpty, "nothing was written")
        }
        let missing = try cluster.client(0, ["import", cluster.root.appendingPathComponent("absent.jsonl").path])
        #expect(missing.status == 1 && missing.stderr.split(separator: "\n").count == 1)
        #expect(try cluster.client(0, ["import", file.path, "--batch", "0"]).status == 64)
    }

    /// A key or value the node would refuse fails the import before anything is sent: the
    /// batches before it are not committed, and the line is named (exit 64).
    @Test func aLineOverTheNodesLimitsWritesNothing() async throws {
        let cluster = try ProcessCluster(size: 1, name: "import-limits")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let limits = ControlEndpoint.replicaLimits
        var valid = ""
        for index in 0..<3000 { valid += "{\"key\":\"k\(index)\",\"value\":\(index)}\n" }
        let longKey = String(repeating: "k", count: limits.maxKeyBytes + 1)
        let bigValue = "\"" + String(repeating: "x", count: limits.maxPayloadBytes - 1) + "\""
        let cases = [
            (valid + "{\"key\":\"\(longKey)\",\"value\":1}\n",
             "replica-node: line 3001: key of \(limits.maxKeyBytes + 1) bytes exceeds the limit of \(limits.maxKeyBytes); nothing was written\n"),
            ("{\"key\":\"a\",\"value\":1}\n{\"key\":\"big\", \"value\": \(bigValue)}\n" + valid,
             "replica-node: line 2: value of \(limits.maxPayloadBytes + 1) bytes exceeds the limit of \(limits.maxPayloadBytes) (without whitespace); nothing was written\n"),
        ]
        let file = cluster.root.appendingPathComponent("over.jsonl")
        for (text, message) in cases {
            try Data(text.utf8).write(to: file)
            let result = try cluster.client(0, ["import", file.path, "--batch", "100"])
            #expect(result.status == 64)
            #expect(result.stderr == message)
            #expect(result.stdout.isEmpty)
            #expect(try cluster.client(0, ["keys"]).stdout.isEmpty, "nothing was written")
        }
    }

    /// Lines far longer than their key and value (whitespace, members import ignores) are sent
    /// rewritten, so no request exceeds the control socket's 4 MiB; and keys that Swift's
    /// String calls equal (canonically equivalent) but whose bytes differ are two keys.
    @Test func longLinesAndCanonicallyEquivalentKeys() async throws {
        let cluster = try ProcessCluster(size: 1, name: "import-long")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let limits = ControlEndpoint.replicaLimits
        let biggest = "\"" + String(repeating: "x", count: limits.maxPayloadBytes - 2) + "\""
        let padding = String(repeating: " ", count: 5 << 20)
        let text = "{\"key\":\"caf\u{E9}\",\"value\":1}\n"
            + "{\"key\":\"cafe\\u0301\",\"value\":2}\n"
            + "{\"key\":\"biggest\",\"value\":\(biggest),\"note\":\"\(String(repeating: "n", count: 3 << 20))\"}\n"
            + "{\"key\":\"spaced\",\"value\":[1,\(padding)2]}\n"
        let file = cluster.root.appendingPathComponent("long.jsonl")
        try Data(text.utf8).write(to: file)
        let started = ContinuousClock.now
        let result = try cluster.client(0, ["import", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "OK 4 keys\n")
        #expect(ContinuousClock.now - started < .seconds(20), "answered, not timed out")

        let keys = try cluster.client(0, ["keys"]).stdout.split(separator: "\n").map { Array($0.utf8) }
        #expect(keys.count == 4)
        #expect(keys.contains(Array("caf\u{E9}".utf8)) && keys.contains(Array("cafe\u{301}".utf8)), "both forms are stored")
        #expect(try cluster.client(0, ["get", "caf\u{E9}"]).stdout == "1\n")
        #expect(try cluster.client(0, ["get", "cafe\u{301}"]).stdout == "2\n")
        #expect(try cluster.client(0, ["get", "spaced"]).stdout == "[1,2]\n")
        #expect(try cluster.client(0, ["get", "biggest"]).stdout == biggest + "\n")
    }

    /// Whatever the input, every request `import` sends fits the control socket's limit, and
    /// the batches hold exactly the last line of each key (compared by bytes).
    @Test func everyBatchFitsTheControlSocket() throws {
        let limits = ControlEndpoint.replicaLimits
        // The longest key, escaped at 6 bytes a byte; the largest value; long ignored members.
        let key = "a" + String(repeating: "\\u0001", count: limits.maxKeyBytes - 1)
        let value = "\"" + String(repeating: "x", count: limits.maxPayloadBytes - 2) + "\""
        var text = ""
        for index in 0..<3 {
            text += "{\"key\":\"\(key)\",\"value\":\(value),\"note\":\"\(String(repeating: "n", count: 2 << 20))\"}\n"
            for small in 0..<2000 { text += "{\"key\":\"s\(index)-\(small)\",\"value\":\"\(String(repeating: "v", count: 600))\"}\n" }
            text += "{\"key\":\"w\(index)\",\"value\":[\(String(repeating: " ", count: 3 << 20))true]}\n"
        }
        text += "{\"key\":\"caf\u{E9}\",\"value\":1}\n{\"key\":\"cafe\u{301}\",\"value\":2}\n{\"key\":\"caf\u{E9}\",\"value\":3}\n"
        let batches = try Import.batches(of: Data(text.utf8), keysPerBatch: 1000, maxBytes: Import.maxBatchBytes)
        var written: [[UInt8]: [UInt8]] = [:]
        for batch in batches {
            let request = try JSONEncoder().encode(ControlRequest.importLines(batch.lines))
            #expect(request.count <= ControlEndpoint.maxRequestBytes, "\(request.count) bytes")
            #expect(batch.lines.count <= max(Import.maxBatchBytes, Import.maxLineBytes(limits) + 1))
            let writes = try ControlServer.writes(importing: batch.lines)
            #expect(writes.count == batch.keys)
            for write in writes { written[Array(write.key.utf8)] = write.payload }
        }
        #expect(written.count == 1 + 3 * 2000 + 3 + 2, "the long key once, each small key, w0...w2, two forms of café")
        #expect(written[Array("caf\u{E9}".utf8)] == Array("3".utf8), "the last line of a key wins")
        #expect(written[Array("cafe\u{301}".utf8)] == Array("2".utf8))
        #expect(written[Array("w2".utf8)] == Array("[true]".utf8))
        let longKey = "a" + String(repeating: "\u{1}", count: limits.maxKeyBytes - 1)
        #expect(written[Array(longKey.utf8)] == Array(value.utf8))
    }

    /// What `get --json` prints goes back in as it was: a base64 value's bytes (not the string)
    /// and its schema, also when the line is rewritten for its length; a wrong encoding or
    /// schema is a bad line. (Both were ignored: binary registers came back as JSON strings with
    /// schema 0, and import said OK.)
    @Test func encodingAndSchemaOfAnExportedLineAreKept() throws {
        let binary: [UInt8] = [0, 1, 2, 0xFF, 0xFE]
        let base64 = Data(binary).base64EncodedString()
        let padding = String(repeating: "n", count: Import.maxBatchBytes)
        let text = """
            {"key":"bin","value":"\(base64)","encoding":"base64","schema":7,"version":"x"}
            {"schema":3,"key":"doc","encoding":"json","value":{"a": 1}}
            {"key":"long","value":"\(base64)","note":"\(padding)","encoding":"base64","schema":65535}
            {"key":"plain","value":"aGk="}

            """
        let batches = try Import.batches(of: Data(text.utf8), keysPerBatch: 1000, maxBytes: Import.maxBatchBytes)
        var written: [String: Replica.WriteRequest] = [:]
        for batch in batches {
            for write in try ControlServer.writes(importing: batch.lines) { written[write.key] = write }
        }
        #expect(written["bin"] == Replica.WriteRequest(key: "bin", payload: binary, schema: 7))
        #expect(written["doc"] == Replica.WriteRequest(key: "doc", payload: Array(#"{"a":1}"#.utf8), schema: 3))
        #expect(written["long"] == Replica.WriteRequest(key: "long", payload: binary, schema: 65535), "rewritten, still base64")
        #expect(written["plain"] == Replica.WriteRequest(key: "plain", payload: Array(#""aGk=""#.utf8)), "no encoding: JSON")
        #expect(!batches.isEmpty && batches.allSatisfy(\.typed), "every batch of such a file goes as importTypedLines")
        let plain = try Import.batches(of: Data(#"{"key":"a","value":1,"schema":0,"encoding":"json"}"#.utf8), keysPerBatch: 10, maxBytes: 1000)
        #expect(plain.map(\.typed) == [false], "what every version stores alike goes as importLines")
        let bad = [
            (#"{"key":"a","value":"%%","encoding":"base64"}"#, "\"value\" is not a string of base64"),
            (#"{"key":"a","value":12,"encoding":"base64"}"#, "\"value\" is not a string of base64"),
            (#"{"key":"a","value":1,"encoding":"hex"}"#, "\"encoding\" must be \"json\" or \"base64\""),
            (#"{"key":"a","value":1,"schema":70000}"#, "\"schema\" must be a whole number from 0 to 65535"),
            (#"{"key":"a","value":1,"schema":-1}"#, "\"schema\" must be a whole number"),
        ]
        for (line, reason) in bad {
            let error = #expect(throws: JSONLines.BadLine.self) { try Import.batches(of: Data(line.utf8), keysPerBatch: 10, maxBytes: 1000) }
            #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
        }
    }

    /// The round trip operations.md describes, on a real node: `get --json` of a binary
    /// register with a schema, imported into another node, reads back the same.
    @Test func aRegisterExportedWithGetJSONImportsBackUnchanged() async throws {
        let cluster = try ProcessCluster(size: 1, name: "import-export")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let file = cluster.root.appendingPathComponent("export.jsonl")
        let base64 = Data([0, 1, 2, 0xFF]).base64EncodedString()
        try Data(#"{"key":"bin","value":"\#(base64)","encoding":"base64","schema":4}"#.utf8).write(to: file)
        #expect(try cluster.client(0, ["import", file.path]).status == 0)
        let exported = try cluster.client(0, ["get", "bin", "--json"]).stdout
        #expect(exported.contains(#""encoding":"base64""#) && exported.contains(#""schema":4"#), "\(exported)")
        try Data(exported.replacingOccurrences(of: #""key":"bin""#, with: #""key":"copy""#).utf8).write(to: file)
        #expect(try cluster.client(0, ["import", file.path]).status == 0)
        let copy = try cluster.client(0, ["get", "copy", "--json"]).stdout
        #expect(copy.contains(#""value":"\#(base64)","encoding":"base64""#) && copy.contains(#""schema":4"#), "\(copy)")
    }

    @Test func importsInBatchesKeepingTheLastLineOfAKey() async throws {
        let cluster = try ProcessCluster(size: 2, name: "import-good")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        var text = "{\"key\": \"dup\", \"value\": {\"n\": 1}}\r\n\n"
        for index in 0..<25 { text += "{\"value\": [\(index), \"x\"], \"note\": \"ignored\", \"key\": \"k\(index)\"}\n" }
        text += "{\"key\":\"dup\",\"value\":{\"n\": 2}}"  // no final newline
        let file = cluster.root.appendingPathComponent("good.jsonl")
        try Data(text.utf8).write(to: file)
        let result = try cluster.client(0, ["import", file.path, "--batch", "4"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "OK 26 keys\n")
        #expect(result.stderr.isEmpty, "no progress lines when stderr is not a terminal")
        #expect(try cluster.client(0, ["get", "dup"]).stdout == "{\"n\":2}\n", "the last line of a key wins")
        #expect(try cluster.client(0, ["get", "k7"]).stdout == "[7,\"x\"]\n")
        #expect(try await eventually { try cluster.client(1, ["keys"]).stdout.split(separator: "\n").count == 26 })

        let piped = try runCapturingOutput(replicaNodeBinary.path, ["import", "-", "--json", "--data", cluster.nodes[0].data.path],
                                           input: Data("{\"key\":\"piped\",\"value\":true}\n".utf8))
        #expect(piped.status == 0, "\(piped)")
        #expect(piped.stdout == "{\"written\":1}\n")
        #expect(try cluster.client(0, ["get", "piped"]).stdout == "true\n")
    }
}
