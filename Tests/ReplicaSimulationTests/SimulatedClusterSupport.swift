import ReplicaSimulation

extension SimulatedCluster {
    /// Runs in steps of 100 ms of simulated time until `condition` holds, for at most `limit`;
    /// returns whether it held.
    func run(within limit: Duration = .seconds(30), until condition: () async -> Bool) async -> Bool {
        let deadline = elapsed + limit
        while elapsed < deadline {
            if await condition() { return true }
            await run(for: .milliseconds(100))
        }
        return await condition()
    }
}
