import ReplicaCore
import ReplicaSimulation
import Testing

/// Decisions about a node's identity, on a simulated cluster (simulated time: the windows of
/// seconds these rules wait out cost nothing here).
@Suite struct IdentityClashSimulationTests {
    /// Two processes with one id (a copied data directory, or `--id` given twice): each keeps
    /// replacing the other's member record, and together they overwrite their counter slots.
    /// At least one of them lists an `identity` problem that fails health and refuses local
    /// writes; another member lists the id as moving back and forth, without failing its own
    /// health; once the rival stops, the problem clears after its window and writes flow again.
    @Test func twoProcessesWithOneIdAreListedAndRefuseWrites() async throws {
        let cluster = try SimulatedCluster(nodes: 3) { index, configuration in
            if index == 2 { configuration.node = "n2" }
        }
        defer { cluster.shutdown() }
        // The second process starts once the first is a member.
        cluster.crash(2)
        let hubHearsTwin = await cluster.run {
            await cluster.replica(0).status().peers.contains { $0.id == "n2" && $0.state == .alive }
        }
        #expect(hubHearsTwin)
        try cluster.restart(2)
        func clashing(_ index: Int) async -> Problem? {
            await cluster.replica(index).status().problems.first { $0.kind == .identity }
        }
        let listedSomewhere = await cluster.run {
            if await clashing(1) != nil { return true }
            return await clashing(2) != nil
        }
        #expect(listedSomewhere, "a clash is listed")
        let (listed, rival) = await clashing(1) != nil ? (1, 2) : (2, 1)
        let problem = try #require(await clashing(listed))
        #expect(problem.failsHealth)
        #expect(problem.message.contains("another process uses this node's id"), "\(problem.message)")
        await #expect(throws: ReplicaError.self, "writes are refused while the clash stands") {
            try await cluster.replica(listed).write("k", payload: Array("1".utf8))
        }
        let hub = cluster.replica(0)
        let counted = await cluster.run {
            await hub.status().problems.contains { $0.kind == .memberIdentity && $0.subject == "n2" && $0.count > 1 }
        }
        #expect(counted, "listed by another member, counted as it goes on moving")
        #expect(await hub.health().healthy, "the hub's own health stays green")
        cluster.crash(rival)
        #expect(await cluster.run(within: .seconds(60)) { await clashing(listed) == nil }, "cleared once the rival is gone")
        let written = await cluster.run { (try? await cluster.replica(listed).write("k", payload: Array("2".utf8))) != nil }
        #expect(written, "and writes flow again")
    }
}
