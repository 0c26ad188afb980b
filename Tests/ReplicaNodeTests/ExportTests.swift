import Foundation
import ReplicaCore
@testable import ReplicaNode
import Spawn
import Testing

/// `export` and the paged `keys` against real nodes: a store larger than a page is listed and
/// exported whole, each key once, and what `export` prints `import` writes back as it was.
@Suite struct ExportTests {
    /// 12,002 registers (more than a page of keys, 10,000, and of entries, 1,000), one binary
    /// with a schema, one whose key a shell would expand, and a counter: `keys` lists the
    /// registers once each in byte order (the counter with --all), `export` prints them all,
    /// and its output imported into another node gives that node the same registers, values,
    /// encodings and schemas. The request of older clients (`keys` in one reply) is still served.
    @Test func exportThenImportRestoresEveryRegister() async throws {
        let source = try ProcessCluster(size: 1, name: "export-from")
        defer { source.stop() }
        let target = try ProcessCluster(size: 1, name: "export-to")
        defer { target.stop() }
        #expect(try await eventually { try source.status(0) != nil && target.status(0) != nil })
        var lines = (0..<12_000).map { #"{"key":"k\#($0)","value":{"n":\#($0)}}"# }
        lines += [#"{"key":"bin","value":"AAEC/w==","encoding":"base64","schema":3}"#, #"{"key":"-x *","value":"odd"}"#]
        // JSON with whitespace, as a program's own codec may store it: exported as base64, so
        // that its newline does not split the line and it comes back byte for byte (helper-75).
        lines += [#"{"key":"pretty","value":"WzEsCiAyXQ==","encoding":"base64"}"#]
        let file = source.root.appendingPathComponent("registers.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        #expect(try source.client(0, ["import", file.path]).status == 0)
        #expect(try source.client(0, ["incr", "visits"]).status == 0)

        let keys = try source.client(0, ["keys"])
        #expect(keys.status == 0)
        let listed = keys.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(listed.count == 12_003 && Set(listed).count == 12_003, "each register once: \(listed.count)")
        #expect(listed == listed.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "in byte order")
        #expect(try source.client(0, ["keys", "--all"]).stdout.split(separator: "\n").count == 12_004, "and the counter's slot")
        let json = try source.client(0, ["keys", "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String])?.count == 12_003)
        let whole = try ControlClient(dataDirectory: source.nodes[0].data).call(.keys(prefix: "k1"), expecting: \.keys)
        #expect(whole.count == 3_111, "k1, k10-k19, ..., k10000-k11999, for a client before 0.28.0")

        let exported = try source.client(0, ["export"])
        #expect(exported.status == 0 && exported.stderr.isEmpty, "no progress when stderr is not a terminal: \(exported.stderr)")
        let exportFile = source.root.appendingPathComponent("export.jsonl")
        try Data(exported.stdout.utf8).write(to: exportFile)
        #expect(try target.client(0, ["import", exportFile.path]).stdout == "OK 12003 keys\n")
        let again = try target.client(0, ["export"])
        #expect(try Self.registers(again.stdout) == Self.registers(exported.stdout), "the same registers, values, encodings, schemas")
        #expect(try Self.registers(exported.stdout).count == 12_003)
        #expect(exported.stdout.split(separator: "\n").count == 12_003, "one line per register")
        #expect(try Self.registers(exported.stdout)["pretty"] == ["WzEsCiAyXQ==", "base64", "0"])
        #expect(try Self.registers(again.stdout)["pretty"] == ["WzEsCiAyXQ==", "base64", "0"], "the same bytes")
        #expect(try Self.registers(exported.stdout)["bin"] == ["AAEC/w==", "base64", "3"])
        #expect(try replicaNode(["get", "--data", target.nodes[0].data.path, "--", "-x *"]).stdout == "\"odd\"\n")
        #expect(try Self.registers(try source.client(0, ["export", "k11"]).stdout).count == 1_111, "a prefix: k11, k110-k119, k1100-k1199, k11000-k11999")

        // Output that cannot be written stops the export at once, exit 1.
        let full = try runCapturingOutput("/bin/sh", ["-c", "exec \(replicaNodeBinary.path) export --data \(source.nodes[0].data.path) > /dev/full"])
        #expect(full.status == 1 && full.stderr == "replica-node: cannot write standard output: no space left on device\n", "\(full)")
        let closed = try runCapturingOutput("/bin/sh", ["-c", "exec \(replicaNodeBinary.path) get k1 --data \(source.nodes[0].data.path) >&-"])
        #expect(closed.status == 1 && closed.stderr == "replica-node: cannot write standard output: bad file descriptor\n", "\(closed)")
        // A change the node applied is a success whatever became of its report (a script that
        // repeats a failed incr counts it twice).
        let applied = try runCapturingOutput("/bin/sh", ["-c", "exec \(replicaNodeBinary.path) incr visits --data \(source.nodes[0].data.path) >&-"])
        #expect(applied.status == 0 && applied.stderr.hasPrefix("warning: the change was applied, but its report could not be written"), "\(applied)")
        #expect(try source.client(0, ["counter", "visits"]).stdout == "2\n")

        // A watch whose output fails ends, saying so (it went on, dropping every change).
        let watch = try ChildProcess("/bin/sh", ["-c", "exec \(replicaNodeBinary.path) watch --data \(source.nodes[0].data.path) > /dev/full"],
                                     output: .pipe, errors: .pipe)
        let errors = LineReader(watch.standardError!)
        defer { watch.signal(SIGKILL) }
        #expect(await errors.next(timeout: .seconds(10))?.hasPrefix("watching") == true)
        #expect(try source.client(0, ["set", "seen", "1"]).status == 0)
        #expect(await errors.next(timeout: .seconds(10)) == "replica-node: cannot write standard output: no space left on device")
        #expect(await eventually { !watch.isRunning })
        #expect(watch.termination == .exited(1))
    }

    /// Each line's key and what `import` stores of it: value (as JSON text), encoding, schema.
    static func registers(_ jsonLines: String) throws -> [String: [String]] {
        var registers: [String: [String]] = [:]
        for line in jsonLines.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8), options: .fragmentsAllowed) as? [String: Any])
            let key = try #require(object["key"] as? String)
            let value = try JSONSerialization.data(withJSONObject: try #require(object["value"]), options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes])
            #expect(registers[key] == nil, "\(key) exported once")
            registers[key] = [String(decoding: value, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\"")),
                              "\(object["encoding"] ?? "")", "\(object["schema"] ?? "")"]
        }
        return registers
    }

    /// More requests in flight than the node reads at once (`ControlServer.maxInFlight`): it
    /// stops reading until replies go out, and every request is answered.
    @Test func requestsBeyondWhatTheNodeReadsAtOnceAreAllAnswered() async throws {
        let cluster = try ProcessCluster(size: 1, name: "control-flood")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let client = try ControlClient(dataDirectory: cluster.nodes[0].data)
        let count = ControlServer.maxInFlight * 4
        for _ in 0..<count { try client.send(.keysPage(prefix: "", after: nil, all: false)) }
        var answered = 0
        while answered < count, let reply = try client.receive(timeout: .seconds(20)) {
            #expect(reply.keysPage?.items == [])
            answered += 1
        }
        #expect(answered == count)
    }
}
