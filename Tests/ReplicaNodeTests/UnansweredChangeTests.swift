import Foundation
import ReplicaCore
@testable import ReplicaNode
import Testing

/// A change the node read but never answered (it hung, or was killed) may or may not have been
/// applied: the client says so, and says to read it back, so a script does not repeat an
/// increment blindly. A read left unanswered says nothing of the kind.
@Suite struct UnansweredChangeTests {
    /// Reads one request on the stand-in's socket and does not answer it.
    private func readWithoutAnswering(_ node: OlderNodeTests.StandIn) throws {
        try #require(try node.socket.waitUntilReadable(timeout: .seconds(10)))
        _ = try node.socket.receive(maxFrames: 2)
    }

    @Test(arguments: [
        (ControlRequest.incr(name: "visits", by: 1), true),
        (.set(key: "k", json: "1"), true),
        (.delete(key: "k"), true),
        (.get(key: "k"), false),
        (.status, false),
    ])
    func aRequestLeftUnansweredSaysWhetherItMayHaveBeenApplied(request: ControlRequest, isChange: Bool) throws {
        let node = try OlderNodeTests.StandIn()
        defer { node.remove() }
        var client = try ControlClient(dataDirectory: node.directory)
        client.timeout = .milliseconds(300)
        let reading = Thread { try? readWithoutAnswering(node) }
        reading.start()
        #expect {
            try client.call(request)
        } throws: { error in
            let text = "\(error)"
            return text.contains("did not answer within")
                && text.contains("may or may not have been applied: read it back before repeating it") == isChange
        }
    }

    @Test func aChangeWhoseNodeStoppedBeforeAnsweringSaysItMayHaveBeenApplied() throws {
        let node = try OlderNodeTests.StandIn()
        defer { node.remove() }
        let client = try ControlClient(dataDirectory: node.directory)
        let closing = Thread {
            try? readWithoutAnswering(node)
            node.socket.close()  // the connection closes: as a killed node's does
        }
        closing.start()
        #expect {
            try client.call(.incr(name: "visits", by: 1))
        } throws: { error in
            "\(error)".hasSuffix("stopped before answering: the node is shutting down (or was killed); the change may or may not "
                + "have been applied: read it back before repeating it (a repeated incr counts twice)")
        }
    }
}
