import Foundation
import Testing
@testable import ReplicaCore

/// A sync reply to a request that names one of our marks leaves out what the requester holds
/// already (`HeldByRequester`): its own writes, and ours through what it reports holding. The
/// test plays the requester against a real node over its ROUTER.
@Suite struct SyncLeaveOutTests {
    @Test func aReplyLeavesOutTheRequestersWritesAndOursItReportsHolding() async throws {
        let peer = try FakePeer()
        // A 100 ms drift: the node's own writes count as of its life from 200 ms after its start.
        let replica = try await peer.quietNode { $0.maxClockDrift = .milliseconds(100) }
        let client = try peer.context.socket(.dealer)
        try client.connect("tcp://127.0.0.1:\(replica.configuration.listen.port + 1)")
        var requestID: UInt64 = 0
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
        #expect(await eventually { UInt64(Date().timeIntervalSince1970 * 1000) > replica.epoch + 200 })
        let first = try sync(since: .none)
        #expect(first.mark.epoch == replica.epoch)

        // Stored after the mark: four writes of the node, three of the requester's (its life began at epoch 1).
        for index in 1...4 { _ = try await replica.write("own\(index)", payload: [UInt8(index)]) }
        let through = await replica.sequence
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
        #expect(try sync(since: .none).keys == ["early", "key1", "key2", "key3", "own1", "own2", "own3", "own4", "own5"])
    }
}
