import CZMQ
import Foundation
import Testing
@testable import ReplicaCore

/// A node whose dials are refused at the handshake says by whom and why. Before, a cluster half
/// moved to CURVE showed its CURVE nodes `isolated` and the insecure ones `down`, and a node
/// whose key a seed did not trust was only `isolated`: nothing named the cause.
@Suite struct HandshakeRefusalTests {
    /// libzmq's monitor events and values, read as failures.
    @Test(arguments: [
        (ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH, HandshakeFailure.mechanismMismatch),
        (ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC, .protocolError(code: ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)),
        (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 400, .refused(status: 400)),
        (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, ECONNRESET, .noDetail(errno: ECONNRESET)),
    ] as [(Int32, Int32, HandshakeFailure)])
    func monitorEventsReadAsFailures(event: Int32, value: Int32, failure: HandshakeFailure) {
        #expect(HandshakeFailure(event: event, value: value) == failure)
    }

    @Test func otherEventsAreNoFailure() {
        #expect(HandshakeFailure(event: ZMQ_EVENT_DISCONNECTED, value: 7) == nil)
        #expect(HandshakeFailure(event: ZMQ_EVENT_HANDSHAKE_SUCCEEDED, value: 0) == nil)
    }

    /// Ten kinds of garbage at a listening socket, each on a connection of its own that then
    /// closes: every one is a failed handshake. (Three in ten went uncounted: a connection
    /// closed before or during the greeting gets no failure event from libzmq, only its close.)
    @Test func everyMalformedHandshakeIsCounted() async throws {
        let node = try ReplicaLayout(count: 1).start(0)
        let port = node.configuration.listen.port
        let signature: [UInt8] = [0xFF] + [UInt8](repeating: 0, count: 8) + [0x7F]
        func greeting(major: UInt8, mechanism: String) -> [UInt8] {
            signature + [major, 0] + Array(mechanism.utf8) + [UInt8](repeating: 0, count: 20 - mechanism.utf8.count) + [0] + [UInt8](repeating: 0, count: 31)
        }
        let garbage: [[UInt8]] = [
            [], [0x01], Array(signature.prefix(5)), signature, signature.dropLast() + [0x00],
            greeting(major: 3, mechanism: "FOO"), Array("GET / HTTP/1.0\r\n\r\n".utf8), [UInt8](repeating: 0, count: 1024),
            greeting(major: 1, mechanism: "NULL"), greeting(major: 3, mechanism: "NULL") + [0x04, 0x05, 0x41, 0x42, 0x43, 0x44, 0x45],
        ]
        for bytes in garbage {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(connected == 0)
            if !bytes.isEmpty { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, bytes.count, 0) } }
            // libzmq has read it (and answered what it answers) before the close.
            try await Task.sleep(for: .milliseconds(50))
            close(fd)
        }
        let counted = await eventually(timeout: .seconds(10)) { await node.counterSnapshot().handshakesFailed >= garbage.count }
        let failed = await node.counterSnapshot().handshakesFailed
        #expect(counted, "\(failed) of \(garbage.count) counted")
        await node.shutdown()
    }

    /// r1 uses CURVE, r2 does not; each has the other as its seed. Each lists the other's
    /// address as a `handshake` problem naming the mismatch from its own side, and each
    /// listener counts the other's connections as failed handshakes.
    @Test func aCurveNodeAndAnInsecureOneNameTheMismatch() async throws {
        let key = try CurveKeyPair.generate()
        let layout = ReplicaLayout(count: 2)
        var secured = layout.configurations[0]
        secured.security = .curve(CurveSecurity(
            keys: key, trusted: [key.publicKey], peerKeys: [layout.configurations[1].listen: key.publicKey]))
        let curveNode = try Replica(secured)
        let plainNode = try layout.start(1)
        let curveAddress = layout.configurations[0].listen.description
        let plainAddress = layout.configurations[1].listen.description

        // Which end sees the mismatch first is a race inside libzmq: when the insecure end closes
        // before the CURVE end has read its greeting, the CURVE end sees only a disconnect, and
        // names the cause at a later dial (its re-dials back off). Hence the longer wait.
        #expect(await eventually(timeout: .seconds(30)) {
            await curveNode.status().problems.contains {
                $0.kind == .handshake && $0.subject == plainAddress && $0.message.contains("the peer does not use CURVE")
            }
        }, "the CURVE node names its seed as not using CURVE")
        #expect(await eventually {
            await plainNode.status().problems.contains {
                $0.kind == .handshake && $0.subject == curveAddress && $0.message.contains("the peer requires CURVE while this node runs insecure")
            }
        }, "the insecure node names its seed as requiring CURVE")
        #expect(await eventually { await plainNode.counterSnapshot().handshakesFailed > 0 }, "an insecure listener counts them too")
        #expect(await plainNode.health().healthy, "listed, not failing: the node itself works")
        await curveNode.shutdown()
        await plainNode.shutdown()
    }

    /// r2 dials r1 with a key r1 does not trust: r1's authentication refuses it (and lists the
    /// refusal), and r2 lists r1 as refusing its key, with the key.
    @Test func aNodeWhoseKeyItsSeedRefusesSaysSo() async throws {
        let keys = [try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        let layout = ReplicaLayout(count: 2, links: [[], [0]])
        let replicas = try (0..<2).map { index in
            var configuration = layout.configurations[index]
            configuration.security = .curve(CurveSecurity(
                keys: keys[index], trusted: index == 0 ? [] : [keys[0].publicKey],
                peerKeys: [layout.configurations[0].listen: keys[0].publicKey]))
            return try Replica(configuration)
        }
        #expect(await eventually { !(await replicas[0].status().refusedHandshakes.isEmpty) })
        let address = layout.configurations[0].listen.description
        #expect(await eventually {
            await replicas[1].status().problems.contains {
                $0.kind == .handshake && $0.subject == address && $0.message.contains("refused this node's key (\(keys[1].publicKey)")
            }
        })
        for replica in replicas { await replica.shutdown() }
    }

    /// A client making up a key per attempt is listed once per key, but only the most recent
    /// rows are kept (helper-69: a row per attempt, for as long as the node ran).
    @Test func refusedConnectionsListOnlyTheMostRecentKeys() async throws {
        let layout = ReplicaLayout(count: 1)
        var configuration = layout.configurations[0]
        let serverKeys = try CurveKeyPair.generate()
        configuration.security = .curve(CurveSecurity(keys: serverKeys, trusted: [], peerKeys: [:]))
        let node = try Replica(configuration)
        let context = try ZMQContext()
        var sockets: [ZMQSocket] = []
        var last = ""
        for _ in 0..<(Replica.refusedHandshakeRows + 6) {
            let socket = try context.socket(.dealer)
            let keys = try CurveKeyPair.generate()
            try socket.setCurveClient(keys, serverKey: serverKeys.publicKey)
            try socket.connect(configuration.listen.syncAddress)
            sockets.append(socket)
            last = keys.publicKey
        }
        #expect(await eventually {
            let refused = await node.status().refusedHandshakes
            return refused.count == Replica.refusedHandshakeRows && refused.contains { $0.publicKey == last }
        })
        #expect(await node.status().counters.untrustedHandshakesRefused >= Replica.refusedHandshakeRows + 1)
        for socket in sockets { socket.close() }
        await node.shutdown()
    }
}
