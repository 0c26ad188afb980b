import Foundation
@testable import ReplicaCore

/// Replica configurations with a chosen peering, so that tests can stop, wipe and restart a node
/// on the same ports, or build a chain A - B - C where A and C only talk through B.
struct ReplicaLayout {
    var configurations: [ReplicaConfiguration]

    /// `links[i]` lists the indices node i connects to (give both directions for a two-way link).
    init(count: Int, links: [[Int]]? = nil, storage: (Int) -> ReplicaConfiguration.Storage = { _ in .memory },
         configure: (inout ReplicaConfiguration) -> Void = { _ in }) {
        let ports = (0..<count).map { _ in testPorts.pair() }
        configurations = (0..<count).map { index in
            let peers = links?[index] ?? ports.indices.filter { $0 != index }
            var configuration = ReplicaConfiguration(
                node: NodeID(rawValue: "r\(index + 1)")!,
                listen: Endpoint(host: "127.0.0.1", port: ports[index]),
                peers: peers.map { Endpoint(host: "127.0.0.1", port: ports[$0]) },
                storage: storage(index))
            configuration.heartbeatInterval = .milliseconds(200)
            configure(&configuration)
            return configuration
        }
    }

    /// `count` replicas, the first keeping its store in `directory` (SQLite), the others in
    /// memory: a node that is stopped, wiped or restarted on its data among members.
    init(count: Int, firstIn directory: URL, configure: (inout ReplicaConfiguration) -> Void = { _ in }) {
        self.init(count: count, storage: { $0 == 0 ? .directory(directory) : .memory }, configure: configure)
    }

    /// Starts two nodes under CURVE (docs/sharing.md's set-up), each trusting the other's key,
    /// named as the other's id's key.
    func startTrustingEachOther(_ keys: [CurveKeyPair]) throws -> [Replica] {
        let endpoints = configurations.map(\.listen)
        return try (0..<2).map { index in
            var configuration = configurations[index]
            let peer = 1 - index
            configuration.security = .curve(CurveSecurity(
                keys: keys[index], trusted: [keys[peer].publicKey], peerKeys: [endpoints[peer]: keys[peer].publicKey],
                keyOwners: [keys[peer].publicKey: configurations[peer].node]))
            return try Replica(configuration)
        }
    }

    func start(_ index: Int, storage: ReplicaConfiguration.Storage? = nil) throws -> Replica {
        var configuration = configurations[index]
        if let storage { configuration.storage = storage }
        return try Replica(configuration)
    }

    func startAll() throws -> [Replica] { try configurations.indices.map { try start($0) } }
}

/// The bytes of a committed fixture (written by an older version of a type).
func fixture(_ name: String, file: String = #filePath) throws -> [UInt8] {
    let url = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
    return Array(try Data(contentsOf: url))
}

func date(_ text: String) -> Date { try! Date.ISO8601FormatStyle().parse(text) }

/// Waits until every replica hears all its peers and has finished a first sync with each, so a
/// test's first publish is not lost to a SUB socket still connecting (anti-entropy would repair
/// it, but only after a stuck first sync times out, which is slow on a loaded machine).
func connected(_ replicas: [Replica], timeout: Duration = .seconds(20)) async -> Bool {
    await eventually(timeout: timeout) {
        let ids = Set(replicas.map { $0.identity.node.rawValue })
        for replica in replicas {
            let peers = await replica.status().peers.filter { ids.contains($0.id) }
            guard peers.count == replicas.count - 1,
                  peers.allSatisfy({ $0.state == .alive && $0.syncsCompleted > 0 }) else { return false }
        }
        return true
    }
}
