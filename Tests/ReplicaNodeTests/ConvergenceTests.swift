import Foundation
import Testing

/// Three real `replica-node serve` processes on loopback (issue: foundation).
@Suite(.serialized) struct ConvergenceTests {
    @Test func aSetOnOneNodeIsReadableOnTheOthers() async throws {
        let cluster = try ProcessCluster(size: 3, name: "set-get")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        let set = try cluster.client(0, ["set", "greeting", "\"hello\""])
        #expect(set.status == 0, "\(set)")
        for index in 1...2 {
            let seen = try await eventually(timeout: .seconds(5)) {
                try cluster.client(index, ["get", "greeting"]).stdout == "\"hello\"\n"
            }
            #expect(seen, "node\(index + 1) never saw the value:\n\(cluster.log(index))")
        }
    }

    @Test func concurrentSetsOfOneKeyEndWithTheHighestVersionEverywhere() async throws {
        let cluster = try ProcessCluster(size: 3, name: "concurrent")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        // Each node writes its own value at (nearly) the same moment.
        let results = try await withThrowingTaskGroup(of: (Int, CommandResult).self) { group in
            for index in 0..<3 {
                group.addTask { (index, try cluster.client(index, ["set", "contended", "\(index)", "--json"])) }
            }
            return try await group.reduce(into: [Int: CommandResult]()) { $0[$1.0] = $1.1 }
        }
        var written: [(hlc: UInt64, node: String, value: String)] = []
        for (index, result) in results {
            #expect(result.status == 0, "\(result)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            written.append(((json["hlc"] as? NSNumber)?.uint64Value ?? 0, json["node"] as? String ?? "", "\(index)"))
        }
        let winner = try #require(written.max { ($0.hlc, $0.node) < ($1.hlc, $1.node) })
        let converged = try await eventually(timeout: .seconds(10)) {
            try (0..<3).allSatisfy { try cluster.client($0, ["get", "contended"]).stdout == "\(winner.value)\n" }
        }
        #expect(converged, "expected \(winner.value) from \(winner.node) everywhere")
        let digests = try (0..<3).map { try cluster.status($0)?["digest"] as? String }
        #expect(Set(digests).count == 1)
    }

    @Test func aRestartedNodeKeepsItsData() async throws {
        let cluster = try ProcessCluster(size: 3, name: "restart")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        for key in 0..<20 { #expect(try cluster.client(1, ["set", "k\(key)", "\(key)"]).status == 0) }
        #expect(cluster.stop(1) == 0, "graceful stop exits 0")
        try cluster.start(1)
        let back = try await eventually { try cluster.client(1, ["get", "k19"]).stdout == "19\n" }
        #expect(back)
        #expect(try cluster.client(1, ["keys"]).stdout.split(separator: "\n").count == 20)
    }

    @Test func aNodeKilledAndRestartedCatchesUpWhatItMissed() async throws {
        let cluster = try ProcessCluster(size: 3, name: "catch-up")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())
        cluster.stop(2, signal: SIGKILL)
        for key in 0..<50 { #expect(try cluster.client(0, ["set", "missed\(key)", "\(key)"]).status == 0) }
        try cluster.start(2)
        let caughtUp = try await eventually(timeout: .seconds(15)) {
            try cluster.client(2, ["keys", "--prefix", "missed"]).stdout.split(separator: "\n").count == 50
        }
        #expect(caughtUp, "\(cluster.log(2))")
    }
}
