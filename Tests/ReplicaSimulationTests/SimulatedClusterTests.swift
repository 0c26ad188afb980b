import ReplicaCore
import ReplicaSimulation
import Testing

/// The library a user's tests use: an in-process cluster with a simulated network and clock.
/// The first test is the example of the DocC article "Testing with a simulated cluster".
@Suite struct SimulatedClusterTests {
    @Test func incrementsOnBothSidesOfAPartitionAddUp() async throws {
        let cluster = try SimulatedCluster(nodes: 3)
        defer { cluster.shutdown() }
        #expect(await cluster.settle(), "every node hears every other")

        cluster.partition([0])
        try await cluster.replica(0).addToCounter("visits", delta: 2)
        try await cluster.replica(1).addToCounter("visits", delta: 3)
        await cluster.run(for: .seconds(10))
        #expect(try await cluster.replica(0).counter("visits").value == 2, "each side sees its own")

        cluster.heal()
        #expect(await cluster.settle())
        for node in 0..<cluster.count {
            #expect(try await cluster.replica(node).counter("visits").value == 5)
        }
    }

    @Test func aCrashedNodeComesBackOnItsDataAndCatchesUp() async throws {
        let cluster = try SimulatedCluster(nodes: 3)
        defer { cluster.shutdown() }
        #expect(await cluster.settle())
        try await cluster.replica(2).write("before", payload: Array("1".utf8))
        cluster.crash(2)
        try await cluster.replica(0).write("while-down", payload: Array("2".utf8))
        await cluster.run(for: .seconds(8))
        try cluster.restart(2)
        #expect(await cluster.settle())
        #expect(try await cluster.replica(2).entry(for: "while-down")?.payload == Array("2".utf8))
        #expect(try await cluster.replica(1).entry(for: "before")?.payload == Array("1".utf8))
    }

    /// Time moves only as the test says: a write takes what its commit and delivery take, and
    /// a paused node is found down only once the cluster has run long enough.
    @Test func timeMovesOnlyWhenRun() async throws {
        let cluster = try SimulatedCluster(nodes: 2)
        defer { cluster.shutdown() }
        #expect(await cluster.settle())
        let before = cluster.elapsed
        cluster.pause(1)
        try await cluster.replica(0).write("k", payload: Array("1".utf8))
        #expect(cluster.elapsed - before < .milliseconds(100), "a write took \(cluster.elapsed - before) of simulated time")
        #expect(await cluster.replica(0).status().peers.first?.state == .alive, "not run yet: not suspect")
        await cluster.run(for: .seconds(10))
        #expect(await cluster.replica(0).status().peers.first?.state == .down)
        cluster.resume(1)
        #expect(await cluster.settle())
        #expect(try await cluster.replica(1).entry(for: "k") != nil)
    }
}
