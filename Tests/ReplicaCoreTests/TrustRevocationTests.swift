import Foundation
import Testing
@testable import ReplicaCore

/// Revoking a member's key under CURVE: the connections it already holds to our sockets are
/// ended (CURVE checks a key only at the handshake), its next handshake is refused, the member is
/// a `trust` problem while it stays untrusted, and trusting it again restores everything.
@Suite struct TrustRevocationTests {
    @Test func aRevokedKeyLosesItsConnectionsAndIsListedUntilTrustedAgain() async throws {
        let keys = [try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        let layout = ReplicaLayout(count: 2, configure: { $0.suspectAfter = .milliseconds(600); $0.downAfter = .seconds(2) })
        let replicas = try layout.startTrustingEachOther(keys)
        let (a, b) = (replicas[0], replicas[1])
        #expect(await connected(replicas))
        #expect(await a.status().problems.isEmpty)

        // a stops trusting b; b still trusts a and keeps its connections to a's sockets open.
        await a.updateTrust(trusted: [], keyOwners: [:])
        #expect(await a.counterSnapshot().revokedConnectionsEnded >= 1, "b's connections to a were ended")
        #expect(await eventually { await b.status().peers.first { $0.id == "r1" }?.state != .alive },
                "b no longer hears a: the connection a's updates and heartbeats went out on is gone")
        #expect(await eventually { !(await a.status().refusedHandshakes.isEmpty) }, "b dialled again and was refused")
        #expect(await eventually { await a.status().problems.contains { $0.kind == .handshake && $0.subject == "r2" && $0.message.contains("uses a key this node does not trust") } },
                "the one member at b's host is named")
        let listed = await a.status().problems.first { $0.kind == .trust }
        #expect(listed?.subject == "r2", "\(String(describing: listed))")
        #expect(listed?.message.contains("not trusted") == true)
        // Refused for another reason (its key now trusted as another node's): the listed
        // message follows, rather than keeping the first reason.
        await a.updateTrust(trusted: [keys[1].publicKey], keyOwners: [keys[1].publicKey: "r3"])
        let relisted = await a.status().problems.first { $0.kind == .trust }
        #expect(relisted?.message.contains("trusted as r3's, not r2's") == true, "\(String(describing: relisted))")
        await a.updateTrust(trusted: [], keyOwners: [:])
        try await a.write("while-revoked", payload: Array("1".utf8))

        // Trusted again: a dials b, b's next dial is admitted, the problem clears, and what a
        // wrote meanwhile reaches b.
        await a.updateTrust(trusted: [keys[1].publicKey], keyOwners: [keys[1].publicKey: "r2"])
        #expect(await a.status().problems.isEmpty)
        #expect(await a.status().refusedHandshakes.isEmpty, "a key trusted now is no longer listed as refused")
        #expect(await a.counterSnapshot().untrustedHandshakesRefused >= 1, "the count since start stays")
        #expect(await eventually(timeout: .seconds(20)) { (try? await b.entry(for: "while-revoked")) != nil })
        #expect(await eventually { await b.status().peers.first { $0.id == "r1" }?.state == .alive })
        for replica in replicas { await replica.shutdown() }
    }

    /// A process that runs as r2 with r3's key (trusted by r1 as r3's: an outside tester,
    /// helper-62) does not take r2's place: r1 refuses its record and lists it, r1 keeps
    /// hearing the real r2, and r2 does not refuse its writes as if its directory ran twice (it
    /// did, within a second, with members listing r2 as untrusted).
    @Test func aProcessRunningAsAMemberWithAnotherMembersKeyDoesNotTakeItsPlace() async throws {
        let keys = [try CurveKeyPair.generate(), try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        let layout = ReplicaLayout(count: 3, links: [[1], [0], [0]])
        let owners: [String: NodeID] = [keys[0].publicKey: "r1", keys[1].publicKey: "r2", keys[2].publicKey: "r3"]
        let replicas = try (0..<3).map { index in
            var configuration = layout.configurations[index]
            if index == 2 { configuration.node = "r2" }  // r3's key, r2's id
            configuration.security = .curve(CurveSecurity(
                keys: keys[index], trusted: Set(index == 1 ? [keys[0].publicKey] : keys.map(\.publicKey)),
                peerKeys: Dictionary(uniqueKeysWithValues: (index == 0 ? [1] : [0]).map { (layout.configurations[$0].listen, keys[$0].publicKey) }),
                keyOwners: owners))
            return try Replica(configuration)
        }
        let (r1, r2) = (replicas[0], replicas[1])
        let impostor = layout.configurations[2].listen
        #expect(await eventually {
            await r1.status().problems.contains { $0.kind == .trust && $0.subject == "r2 at \(impostor)" && $0.message.contains("with r3's key") }
        }, "r1 refuses the record and lists it")
        try await r2.write("still-writing", payload: Array("1".utf8))
        #expect(await eventually { (try? await r1.entry(for: "still-writing")) != nil })
        let status = await r1.status()
        #expect(status.peers.first { $0.id == "r2" }?.address == layout.configurations[1].listen.description, "r1 keeps the real r2")
        #expect(await !r2.status().problems.contains { $0.kind == .identity })
        for replica in replicas { await replica.shutdown() }
    }

    /// A node given another member's key pair (an operator's slip, found by an outside tester):
    /// the members accept its connections (the key is trusted) but refuse its record (the key
    /// is trusted as another node's), so it hears them and they never hear it, and its writes
    /// reach no one. It used to look healthy; it is now `isolated`, saying that no member reports
    /// hearing it, while the members list it as a `trust` problem.
    @Test func aNodeThatNoMemberHearsIsListedIsolated() async throws {
        let keys = [try CurveKeyPair.generate(), try CurveKeyPair.generate()]
        let layout = ReplicaLayout(count: 3, links: [[1], [0], [0]], configure: {
            $0.heartbeatInterval = .milliseconds(100)
            $0.suspectAfter = .milliseconds(600)
            $0.downAfter = .seconds(1)
        })
        let owners: [String: NodeID] = [keys[0].publicKey: "r1", keys[1].publicKey: "r2"]
        // r3 is given r1's key pair; every node trusts both keys, under their owners' names.
        let keyOf = [keys[0], keys[1], keys[0]]
        let replicas = try (0..<3).map { index in
            var configuration = layout.configurations[index]
            configuration.security = .curve(CurveSecurity(
                keys: keyOf[index], trusted: Set(keys.map(\.publicKey)),
                peerKeys: Dictionary(uniqueKeysWithValues: (0..<3).filter { $0 != index }.map { (layout.configurations[$0].listen, keyOf[$0].publicKey) }),
                keyOwners: owners))
            return try Replica(configuration)
        }
        let (r1, r3) = (replicas[0], replicas[2])
        #expect(await eventually {
            await r1.status().problems.contains { $0.kind == .trust && $0.subject.hasPrefix("r3 at ") && $0.message.contains("with r1's key") }
        }, "r1 refuses r3's record: its key is trusted as r1's")
        #expect(await eventually { await r3.status().peers.contains { $0.id == "r1" && $0.state == .alive } }, "r3 hears r1")
        #expect(await eventually(timeout: .seconds(15)) {
            await r3.status().problems.contains { $0.kind == .isolated && $0.message.contains("none has reported hearing this node") }
        }, "r3 is listed: no member hears it")
        #expect(await !r1.status().problems.contains { $0.kind == .isolated }, "r1 is heard by r2")
        for replica in replicas { await replica.shutdown() }
    }

    /// c connects after b, so its subscriptions to a's XPUB repeat b's: only an XPUB that
    /// reports every subscriber's (`ZMQ_XPUB_VERBOSE`) learns c's connection, and can end it.
    @Test func aLaterSubscriberOfTheSameTopicsIsEndedToo() async throws {
        let keys = try (0..<3).map { _ in try CurveKeyPair.generate() }
        let layout = ReplicaLayout(count: 3, configure: { $0.suspectAfter = .milliseconds(600); $0.downAfter = .seconds(2) })
        func start(_ index: Int) throws -> Replica {
            var configuration = layout.configurations[index]
            let others = (0..<3).filter { $0 != index }
            configuration.security = .curve(CurveSecurity(
                keys: keys[index], trusted: Set(others.map { keys[$0].publicKey }),
                peerKeys: Dictionary(uniqueKeysWithValues: others.map { (layout.configurations[$0].listen, keys[$0].publicKey) })))
            return try Replica(configuration)
        }
        let (a, b) = (try start(0), try start(1))
        #expect(await connected([a, b]))
        let c = try start(2)
        #expect(await connected([a, b, c]))
        await a.updateTrust(trusted: [keys[1].publicKey], keyOwners: [:])
        #expect(await a.counterSnapshot().revokedConnectionsEnded >= 1)
        // c may still list a alive through b (liveness one hop); what it hears directly stops.
        #expect(await eventually { (await c.status().peers.first { $0.id == "r1" }?.lastSeenSecondsAgo ?? 0) > 1.5 }, "c no longer hears a")
        #expect(await b.status().peers.first { $0.id == "r1" }?.state == .alive, "b, still trusted, keeps hearing a")
        for replica in [a, b, c] { await replica.shutdown() }
    }

    /// `AcceptedConnections`: which connections a revocation ends, and that a descriptor a
    /// closed connection leaves to a new one is not ended for the old one's key.
    @Test func acceptedConnectionsEndOnlyTheRevokedKeysLiveConnections() {
        var connections = AcceptedConnections()
        connections.heard(on: 10, key: "A")
        connections.heard(on: 11, key: "B")
        connections.heard(on: 12, key: "A")
        connections.closed(12)  // A's second connection closed; 12 may be reused by anyone
        let revoked = connections.revoke { $0 != "A" }
        #expect(revoked == [10], "only A's open connection")
        #expect(connections.keys == [11: "B"])
        let again = connections.endUntrusted(10)
        #expect(!again, "already ended: its queued messages are only dropped")
        let unrecorded = connections.endUntrusted(13)
        #expect(unrecorded, "an unrecorded connection of a revoked key: ended once")
        let twice = connections.endUntrusted(13)
        #expect(!twice)
        connections.closed(13)
        let reused = connections.endUntrusted(13)
        #expect(reused, "a new connection on a reused descriptor is new")
        #expect(connections.knows(11, as: "B") && !connections.knows(11, as: "A"))
    }
}
