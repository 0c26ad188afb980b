import ReplicaCore
import ReplicaSimulation
import Testing

/// Decisions about members' clocks, on a simulated cluster.
@Suite struct ClockSimulationTests {
    /// A member listed for its clock that goes down is listed no more: there is no clock to
    /// judge (an outside tester saw the problem stay, its "last" time after the member stopped).
    @Test func aMemberThatIsDownIsNoLongerListedForItsClock() async throws {
        let cluster = try SimulatedCluster(nodes: 3)
        defer { cluster.shutdown() }
        cluster.setClockOffset(1, .seconds(120))
        let a = cluster.replica(0)
        #expect(await cluster.run { await a.status().problems.contains { $0.kind == .peerClock && $0.subject == "n2" } })
        cluster.crash(1)
        #expect(await cluster.run { await a.status().peers.first { $0.id == "n2" }?.state == .down })
        #expect(await !a.status().problems.contains { $0.kind == .peerClock })
    }
}
