import Foundation
import Testing
@testable import ReplicaCore

/// A sync reply to a request that names one of our marks leaves out what the requester holds
/// already (`HeldByRequester`): its own writes, and every other writer's (ours, a third
/// member's) through what it reports holding. The tests play the requester against a real node
/// over its ROUTER.
@Suite struct SyncLeaveOutTests {
    @Test func aReplyLeavesOutTheRequestersWritesAndOursItReportsHolding() async throws {
        let peer = try FakePeer()
        // A 100 ms drift: the node's own writes count as of its life from 200 ms after its start.
        let replica = try await peer.quietNode { $0.maxClockDrift = .milliseconds(100) }
        let requester = try Requester(peer: peer, replica: replica)
        func sync(since: StoreMark) throws -> (keys: [String], mark: StoreMark) { try requester.sync(since: since) }
        #expect(await eventually { UInt64(Date().timeIntervalSince1970 * 1000) > replica.epoch + 200 })
        let first = try sync(since: .none)
        #expect(first.mark.epoch == replica.epoch)

        // Stored after the mark: four writes of the node, three of the requester's (its life began at epoch 1).
        for index in 1...4 { _ = try await replica.write("own\(index)", payload: [UInt8(index)]) }
        let through = await replica.core.own.sequence
        for update in peer.updates { try peer.publish(update) }
        // And one stamped before the requester's life began (plus the 200 ms margin): maybe of
        // an earlier life of it, lost by a power cut. It goes.
        let early = Entry(key: "early", version: Version(timestamp: HybridTimestamp(wallMillis: 100, logical: 0), node: "fake"), payload: [1])
        try peer.publish(Update(origin: "fake", sequence: 4, entry: early))
        #expect(try await eventually {
            for key in ["key1", "key2", "key3", "early"] where try await replica.entry(for: key) == nil { return false }
            return true
        })

        let report = PeerReport(node: "node", epoch: replica.epoch, through: through, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
        let leftOut = try await eventually {
            try peer.heartbeat(reports: [report])
            return try sync(since: first.mark).keys == ["early"]
        }
        #expect(leftOut, "everything else stored since the mark is held by the requester")
        #expect(await replica.counterSnapshot().syncEntriesLeftOut >= 7)

        // A write after what it reports holding goes; a request naming no mark gets everything.
        _ = try await replica.write("own5", payload: [5])
        #expect(try sync(since: first.mark).keys == ["early", "own5"])
        let everything = ["early", "key1", "key2", "key3", "own1", "own2", "own3", "own4", "own5"]
        #expect(try sync(since: .none).keys == everything)

        // An identity in doubt: the marks given before are no longer honoured (a reply may have
        // left out what the requester lacked), and one given after a later store is.
        await replica.doubt("someone")
        #expect(try sync(since: first.mark).keys == everything)
        _ = try await replica.write("own6", payload: [6])
        let fresh = try sync(since: .none)
        _ = try await replica.write("own7", payload: [7])
        #expect(try sync(since: fresh.mark).keys == ["own7"])
    }

    /// A third writer's writes, which the requester reports holding of its stream, are left
    /// out too: the writer is a real node whose heartbeats pair its sequence with its clock.
    @Test func aReplyLeavesOutAThirdWritersWritesTheRequesterReportsHolding() async throws {
        let peer = try FakePeer()
        let nodePort = testPorts.pair()
        var writerConfiguration = ReplicaConfiguration(
            node: "writer", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()),
            peers: [Endpoint(host: "127.0.0.1", port: nodePort)], storage: .memory)
        writerConfiguration.heartbeatInterval = .milliseconds(200)
        writerConfiguration.maxClockDrift = .milliseconds(100)
        let writer = try Replica(writerConfiguration)
        let replica = try peer.makeNode {
            $0.listen = Endpoint(host: "127.0.0.1", port: nodePort)
            $0.peers.append(writerConfiguration.listen)
            $0.maxClockDrift = .milliseconds(100)
        }
        #expect(try await peer.waitUntilHeard(by: replica))
        #expect(try await eventually(timeout: .seconds(60)) {
            try peer.keepAlive()
            return await replica.status().peers.first { $0.id == "writer" }?.state == .alive
        })
        let requester = try Requester(peer: peer, replica: replica)
        // The writer's life, as the node judges it, from 200 ms after its start, and past the
        // first heartbeat of it the node heard.
        #expect(await eventually { UInt64(Date().timeIntervalSince1970 * 1000) > writer.epoch + 200 })
        #expect(try await eventually {
            try peer.keepAlive()
            return await replica.core.sessions["writer"]?.publications != nil
        })
        let first = try requester.sync(since: .none)

        for index in 1...4 { _ = try await writer.write("w\(index)", payload: [UInt8(index)]) }
        let through = await writer.core.own.sequence
        #expect(try await eventually {
            try peer.keepAlive()
            for index in 1...4 where try await replica.entry(for: "w\(index)") == nil { return false }
            return true
        })
        let report = PeerReport(node: "writer", epoch: writer.epoch, through: through, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
        let leftOut = try await eventually {
            try peer.heartbeat(reports: [report])
            return try requester.sync(since: first.mark).keys.isEmpty
        }
        #expect(leftOut, "the writer's writes through the reported sequence are held by the requester")
        #expect(await replica.counterSnapshot().syncEntriesLeftOut >= 4)

        // A write past what the requester reports holding goes; a request naming no mark gets everything.
        _ = try await writer.write("w5", payload: [5])
        #expect(try await eventually {
            try peer.heartbeat(reports: [report])  // its latest heartbeat is the one that counts
            return try await replica.entry(for: "w5") != nil
        })
        let afterReport = try requester.sync(since: first.mark).keys
        #expect(afterReport == ["w5"])
        let whole = try requester.sync(since: .none).keys
        #expect(whole == ["w1", "w2", "w3", "w4", "w5"])
    }

    /// The requester's side of a sync, played over a DEALER connected to the node's ROUTER.
    final class Requester {
        let peer: FakePeer
        let client: ZMQSocket
        var requestID: UInt64 = 0

        init(peer: FakePeer, replica: Replica) throws {
            self.peer = peer
            client = try peer.context.socket(.dealer)
            try client.connect("tcp://127.0.0.1:\(replica.configuration.listen.port + 1)")
        }

        /// Asks for every bucket (as if all differed) and gathers the reply's keys, sorted.
        func sync(since: StoreMark) throws -> (keys: [String], mark: StoreMark) {
            requestID += 1
            let request = SyncRequest(origin: "fake", requestID: requestID, buckets: Array(repeating: 0, count: StoreDigest.bucketCount), since: since)
            try client.send([peer.codec.encode(.syncRequest(request))], wait: true)
            var keys: [String] = []
            while true {
                guard try client.waitUntilReadable(timeout: .seconds(10)), let reply = try client.receive(),
                      case .syncChunk(let chunk) = try peer.codec.decode(reply.frames[0])
                else { throw WireError.truncated }
                guard chunk.requestID == requestID else { continue }
                keys += chunk.entries.map(\.key)
                if chunk.isLast { return (keys.sorted(), chunk.mark) }
            }
        }
    }
}
