import Foundation
import ReplicaCore
@testable import ReplicaNode
import Spawn
import Testing

/// This version's client with a node of an earlier one, played by a stand-in that answers on
/// the node's control socket as that version does (a node of 0.16 or 0.18 is not built here).
@Suite(.serialized) struct OlderNodeTests {
    /// A stand-in node: a ROUTER on `DIR/control.sock` that the client under test reaches.
    struct StandIn {
        let directory: URL
        let context: ZMQContext
        let socket: ZMQSocket

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-older-\(UUID().uuidString.prefix(6))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            context = try ZMQContext()
            socket = try context.socket(.router)
            try socket.bind(ControlEndpoint.address(in: directory))
        }

        /// Reads the next request and answers it with `reply`; returns the request's JSON.
        func answer(with reply: String) throws -> String {
            guard try socket.waitUntilReadable(timeout: .seconds(15)), let request = try socket.receive(maxFrames: 2), request.frames.count == 2 else {
                throw ControlClient.Unreachable(message: "no request reached the stand-in")
            }
            _ = try socket.send([request.frames[0], Array(reply.utf8)])
            return String(decoding: request.frames[1], as: UTF8.self)
        }

        /// Stops serving as a stopping node does: its socket file goes first.
        func stopServing() throws { try FileManager.default.removeItem(atPath: ControlEndpoint.socketPath(in: directory)) }

        func remove() {
            socket.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Starts `replica-node ARGS`; `finish` collects what it printed.
    static func start(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(replicaNodeBinary.path, arguments, output: .pipe, errors: .pipe)
    }

    static func finish(_ started: ChildProcess) -> CommandResult { collectOutput(of: started) }

    /// A node of 0.16 answers `leave` as `{"left":{"acknowledged":N}}`, which this client cannot
    /// read; the node then stops, so it left: exit 0, saying so. (It exited 1 with "cannot read
    /// the reply", although the node had left.)
    @Test func aLeaveAnsweredInAnOlderFormIsTakenFromTheNodeStopping() throws {
        let node = try StandIn()
        defer { node.remove() }
        let client = try Self.start(["leave", "--data", node.directory.path])
        let request = try node.answer(with: #"{"left":{"acknowledged":2}}"#)
        #expect(request.contains("leave"))
        try node.stopServing()
        let result = Self.finish(client)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("OK left the cluster; the node stopped"), "\(result)")
        #expect(result.stdout.contains("no field left._0"), "says what it could not read: \(result)")
    }

    /// A node of 0.18 answers `leave` without `earlierWrites`: read as false.
    @Test func aDepartureWithoutEarlierWritesReads() throws {
        let reply = #"{"left":{"_0":{"left":true,"asked":["node1"],"holding":["node1"],"acknowledged":["node1"],"published":3}}}"#
        let departure = try #require(try JSONDecoder().decode(ControlReply.self, from: Data(reply.utf8)).left)
        #expect(departure == Departure(left: true, asked: ["node1"], holding: ["node1"], acknowledged: ["node1"], published: 3, earlierWrites: false))
    }

    /// A node older than 0.20.0 refuses `importTypedLines` as malformed: the client says why and
    /// that nothing was written. (A node before 0.19.0 took the lines as `importLines`, stored a
    /// binary value as the JSON text of its base64 at schema 0, and import said OK.)
    @Test func anImportWithEncodingOrSchemaIsRefusedByAnOlderNodeAndSaysSo() throws {
        let node = try StandIn()
        defer { node.remove() }
        let file = node.directory.appendingPathComponent("export.jsonl")
        try Data("{\"key\":\"bin\",\"value\":\"AAEC/w==\",\"encoding\":\"base64\"}\n{\"key\":\"doc\",\"value\":{\"y\":1},\"schema\":3}\n".utf8).write(to: file)
        let client = try Self.start(["import", file.path, "--data", node.directory.path])
        let request = try node.answer(with: #"{"failure":{"_0":{"code":"invalidRequest","message":"malformed control request"}}}"#)
        #expect(request.contains("importTypedLines"), "\(request)")
        let result = Self.finish(client)
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("older than 0.20.0"), "\(result)")
        #expect(result.stderr.contains("nothing was written"), "\(result)")
        #expect(!result.stderr.contains("importing the file again"), "no advice meant for a half-written import: \(result)")
    }

    /// A node before 0.28.0 knows no page of keys: `keys` asks again for the whole list, as
    /// that node serves it, and prints it; `export` says the node is too old and how else to
    /// export. Neither prints anything twice nor half.
    @Test func keysFallsBackToTheWholeListAndExportSaysTheNodeIsTooOld() throws {
        let node = try StandIn()
        defer { node.remove() }
        let malformed = #"{"failure":{"_0":{"code":"invalidRequest","message":"malformed control request"}}}"#
        let keys = try Self.start(["keys", "--data", node.directory.path])
        #expect(try node.answer(with: malformed).contains("keysPage"))
        #expect(try node.answer(with: #"{"keys":{"_0":["a","b","\u001fcounter/x/1"]}}"#).contains("\"keys\""))
        let listed = Self.finish(keys)
        #expect(listed.status == 0 && listed.stdout == "a\nb\n", "reserved keys hidden as before: \(listed)")

        let export = try Self.start(["export", "--data", node.directory.path])
        #expect(try node.answer(with: malformed).contains("exportPage"))
        let refused = Self.finish(export)
        #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused)")
        #expect(refused.stderr.contains("older than 0.28.0, which cannot export"), "\(refused)")
    }

    /// A node whose page names, as the next start, a key not past the page before would keep a
    /// listing going for ever: the client stops, saying so (exit 1), after the pages before it.
    @Test func aListingThatDoesNotMoveOnIsStopped() throws {
        let node = try StandIn()
        defer { node.remove() }
        let keys = try Self.start(["keys", "--data", node.directory.path])
        #expect(try node.answer(with: #"{"keysPage":{"_0":["a","b"],"next":"b"}}"#).contains("keysPage"))
        #expect(try node.answer(with: #"{"keysPage":{"_0":["b"],"next":"b"}}"#).contains(#""after":"b""#))
        let result = Self.finish(keys)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("a listing page did not move past b"), "\(result)")
        #expect(result.stdout == "a\nb\n", "the pages before it are printed, not it: \(result)")
    }
}
