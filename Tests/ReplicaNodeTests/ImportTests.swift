import Foundation
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
            ("{\"key\":7,\"value\":1}\n", "line 1: missing string \"key\""),
            ("[1,2]\n", "line 1: not a JSON object"),
            ("{\"key\":\"\\u001Fcounter/x/y\",\"value\":1}\n", "line 1: keys starting with U+001F are reserved"),
        ]
        for (text, message) in cases {
            try Data(text.utf8).write(to: file)
            let result = try cluster.client(0, ["import", file.path])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("replica-node: \(message)"), "\(result.stderr)")
            #expect(result.stderr.hasSuffix("; nothing was written\n"))
            #expect(try cluster.client(0, ["keys"]).stdout.isEmpty, "nothing was written")
        }
        let missing = try cluster.client(0, ["import", cluster.root.appendingPathComponent("absent.jsonl").path])
        #expect(missing.status == 1 && missing.stderr.split(separator: "\n").count == 1)
        #expect(try cluster.client(0, ["import", file.path, "--batch", "0"]).status == 64)
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

        let stdin = Process()
        stdin.executableURL = replicaNodeBinary
        stdin.arguments = ["import", "-", "--json", "--data", cluster.nodes[0].data.path]
        let input = Pipe(), output = Pipe()
        stdin.standardInput = input
        stdin.standardOutput = output
        try stdin.run()
        input.fileHandleForWriting.write(Data("{\"key\":\"piped\",\"value\":true}\n".utf8))
        try input.fileHandleForWriting.close()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        stdin.waitUntilExit()
        #expect(stdin.terminationStatus == 0)
        #expect(String(decoding: printed, as: UTF8.self) == "{\"written\":1}\n")
        #expect(try cluster.client(0, ["get", "piped"]).stdout == "true\n")
    }
}
