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
        let listed = await a.status().problems.first { $0.kind == .trust }
        #expect(listed?.subject == "r2", "\(String(describing: listed))")
        #expect(listed?.message.contains("not trusted") == true)
        try await a.write("while-revoked", payload: Array("1".utf8))

        // Trusted again: a dials b, b's next dial is admitted, the problem clears, and what a
        // wrote meanwhile reaches b.
        await a.updateTrust(trusted: [keys[1].publicKey], keyOwners: [keys[1].publicKey: "r2"])
        #expect(await a.status().problems.isEmpty)
        #expect(await eventually(timeout: .seconds(20)) { (try? await b.entry(for: "while-revoked")) != nil })
        #expect(await eventually { await b.status().peers.first { $0.id == "r1" }?.state == .alive })
        for replica in replicas { await replica.shutdown() }
    }
}
