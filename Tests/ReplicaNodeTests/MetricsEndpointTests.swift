import Foundation
import Testing

/// `serve --metrics`: a real HTTP scrape of /metrics from a running node, parsed as Prometheus
/// exposition, with values moving as writes happen.
@Suite(.serialized) struct MetricsEndpointTests {
    @Test func scrapesShowWritesCommitsPeersAndErrors() async throws {
        let metricsPort = TestPorts.pair()
        let cluster = try ProcessCluster(size: 2, name: "metrics") { _ in
            ["node1": ["--insecure", "--metrics", "127.0.0.1:\(metricsPort)"]]
        }
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())

        // The reporter records a status snapshot every second: wait for one that saw node2.
        let peer = ["node": "node1", "peer": "node2"]
        #expect(try await eventually { try scrapeMetrics(port: metricsPort).value("replica_peer_state", peer.merging(["state": "alive"]) { $1 }) == 1 })

        let response = try httpGet(port: metricsPort, path: "/metrics")
        #expect(response.status == 200)
        #expect(response.headers.contains("Content-Type: text/plain; version=0.0.4"))
        let before = try PrometheusExposition(parsing: response.body)
        for (name, type) in [
            ("replica_commit_duration_seconds", "histogram"), ("replica_commits_total", "counter"),
            ("replica_updates_published_total", "counter"), ("replica_updates_applied_total", "counter"),
            ("replica_sync_bytes_total", "counter"), ("replica_repair_bytes_total", "counter"),
            ("replica_peer_bytes_received_total", "counter"), ("replica_peer_round_trip_seconds", "gauge"),
            ("replica_dropped_total", "counter"), ("replica_peer_state", "gauge"),
            ("replica_peer_replication_lag_seconds", "gauge"), ("replica_peer_clock_offset_seconds", "gauge"),
            ("replica_load_errors", "gauge"), ("replica_save_errors", "gauge"),
            ("replica_problems", "gauge"), ("replica_healthy", "gauge"),
        ] {
            #expect(before.types[name] == type, "\(name) is a \(type)")
        }
        for state in ["suspect", "down", "left"] {
            #expect(before.value("replica_peer_state", peer.merging(["state": state]) { $1 }) == 0)
        }
        #expect(before.value("replica_dropped_total", ["cause": "malformed"]) == 0)
        #expect(before.value("replica_load_errors") == 0)
        #expect(before.value("replica_problems", ["kind": "store"]) == 0 && before.value("replica_problems", ["kind": "identity"]) == 0)
        #expect(before.value("replica_healthy") == 1)
        #expect(before.value("replica_peer_replication_lag_seconds", peer) == 0)
        #expect(before.value("replica_peer_clock_offset_seconds", peer).map { abs($0) < 5 } == true, "same machine, same clock")

        let published = before.value("replica_updates_published_total") ?? -1
        let applied = before.value("replica_updates_applied_total") ?? -1
        let commits = before.value("replica_commit_duration_seconds_count") ?? -1
        for index in 0..<20 { #expect(try cluster.client(0, ["set", "metric\(index)", "\(index)"]).status == 0) }
        for _ in 0..<3 { #expect(try cluster.client(1, ["incr", "visits"]).status == 0) }

        var after = before
        let moved = try await eventually {
            after = try scrapeMetrics(port: metricsPort)
            return (after.value("replica_updates_published_total") ?? 0) >= published + 20
                && (after.value("replica_updates_applied_total") ?? 0) >= applied + 3
        }
        #expect(moved, "published \(published) -> \(after.value("replica_updates_published_total") ?? -1)")
        // The commit histogram is recorded by the commit itself, not the reporter.
        let count = try #require(after.value("replica_commit_duration_seconds_count"))
        #expect(count >= commits + 20)
        #expect(after.value("replica_commit_duration_seconds_bucket", ["le": "+Inf"]) == count)
        let buckets = after.samples.filter { $0.name == "replica_commit_duration_seconds_bucket" }.map(\.value)
        #expect(buckets == buckets.sorted(), "cumulative buckets never decrease")
        #expect((after.value("replica_committed_entries_total", ["origin": "local"]) ?? 0) >= 20)
        #expect((after.value("replica_committed_entries_total", ["origin": "remote"]) ?? 0) >= 3)
        #expect(after.value("replica_entries") == 21, "20 keys and node2's counter slot")

        #expect(try httpGet(port: metricsPort, path: "/other").status == 404)
    }

    @Test func aMetricsAddressInUseIsAClearStartError() async throws {
        let metricsPort = TestPorts.pair()
        let cluster = try ProcessCluster(size: 1, name: "metrics-busy") { _ in
            ["node1": ["--insecure", "--metrics", "127.0.0.1:\(metricsPort)"]]
        }
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let root = cluster.root.appendingPathComponent("second")
        let second = try replicaNode([
            "serve", "--id", "other", "--listen", "127.0.0.1:\(TestPorts.pair())", "--data", root.path, "--insecure",
            "--metrics", "127.0.0.1:\(metricsPort)",
        ])
        #expect(second.status == 1)
        #expect(second.stderr == "replica-node: cannot start: --metrics 127.0.0.1:\(metricsPort): address already in use\n", "\(second.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.path), "no data directory made")
        let invalid = try replicaNode(["serve", "--id", "x", "--listen", "127.0.0.1:1", "--data", root.path, "--insecure", "--metrics", "nowhere"])
        #expect(invalid.status == 64)
        #expect(invalid.stderr == "replica-node: Invalid --metrics 'nowhere': expected HOST:PORT with PORT in 1...65535.\n")
    }
}
