import Foundation
@testable import ReplicaNode
import Spawn
import Testing

/// How `cluster` decides that it is over, with stand-in processes (`true` stops cleanly at
/// once, a Python sleep runs until signalled) instead of nodes.
@Suite struct ClusterProcessesTests {
    private func start(_ executable: String, _ arguments: [String] = [], as id: String, in children: ClusterProcesses) throws {
        try children.launch(executable, arguments, id: id)
    }

    private func awaitExit(of id: String, in children: ClusterProcesses) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !children.hasExited(id) {
            try #require(ContinuousClock.now < deadline, "\(id) should have exited")
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The first node stopping cleanly before the second is started is not "every node stopped":
    /// starting goes on, and the cluster runs until the rest stop.
    @Test func aNodeStoppingCleanlyWhileOthersStartLeavesTheClusterRunning() async throws {
        let children = ClusterProcesses()
        try start("/bin/true", as: "node1", in: children)
        try await awaitExit(of: "node1", in: children)
        #expect(children.reason == nil, "one of two nodes stopped, while the second was not started yet")
        // Nothing blocked in the child (`ChildProcess` resets the mask the test runner's threads have).
        try start("/usr/bin/python3", ["-c", "import time; time.sleep(30)"], as: "node2", in: children)
        children.finishedLaunching()
        #expect(children.reason == nil, "node2 still runs")
        let root = FileManager.default.temporaryDirectory
        let problems = await children.stopAll(root: root)
        #expect(problems.isEmpty, "both stopped cleanly (node2 on SIGTERM): \(problems)")
    }

    /// Once every node is started, the last one to stop cleanly ends the cluster, even if they all
    /// stopped before starting was over.
    @Test func everyNodeStoppedCleanlyEndsTheCluster() async throws {
        let children = ClusterProcesses()
        try start("/bin/true", as: "node1", in: children)
        try start("/bin/true", as: "node2", in: children)
        try await awaitExit(of: "node1", in: children)
        try await awaitExit(of: "node2", in: children)
        #expect(children.reason == nil)
        children.finishedLaunching()
        guard case .allStoppedCleanly = try #require(children.reason) else {
            Issue.record("expected allStoppedCleanly, got \(String(describing: children.reason))")
            return
        }
    }

    /// A node that fails stops the cluster at once, starting or not.
    @Test func aNodeThatFailsStopsTheCluster() async throws {
        let children = ClusterProcesses()
        try start("/bin/false", as: "node1", in: children)
        try await awaitExit(of: "node1", in: children)
        guard case .exited(let id, let status) = try #require(children.reason) else {
            Issue.record("expected exited, got \(String(describing: children.reason))")
            return
        }
        #expect(id == "node1" && status == "exited with status 1")
    }

    /// The hints `cluster` prints must work when pasted into a shell, whatever the data path.
    @Test(arguments: [
        ("/tmp/cluster-data/node1", "/tmp/cluster-data/node1"),
        ("/tmp/dä ta/node1", "'/tmp/dä ta/node1'"),
        ("/tmp/it's/node1", "'/tmp/it'\\''s/node1'"),
        ("", "''"),
    ])
    func hintPathsArePastable(_ path: String, _ word: String) {
        #expect(Cluster.shellWord(path) == word)
    }
}
