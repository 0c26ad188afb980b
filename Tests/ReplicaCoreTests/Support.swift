import Foundation
import Spawn
import Synchronization
@testable import ReplicaCore

/// Loopback port pairs for in-process replicas (see `LoopbackPorts`).
let testPorts = LoopbackPorts(range: 10_000..<20_000)

/// Two or more `Replica` actors in this process, peered over real ZeroMQ sockets on loopback.
func makeReplicas(
    _ count: Int, storage: (Int) -> ReplicaConfiguration.Storage = { _ in .memory },
    configure: (Int, inout ReplicaConfiguration) -> Void = { _, _ in }
) throws -> [Replica] {
    let ports = (0..<count).map { _ in testPorts.pair() }
    return try (0..<count).map { index in
        var configuration = ReplicaConfiguration(
            node: NodeID(rawValue: "r\(index + 1)")!,
            listen: Endpoint(host: "127.0.0.1", port: ports[index]),
            peers: ports.indices.filter { $0 != index }.map { Endpoint(host: "127.0.0.1", port: ports[$0]) },
            storage: storage(index))
        configuration.heartbeatInterval = .milliseconds(200)
        configure(index, &configuration)
        return try Replica(configuration)
    }
}

/// Waits until `condition` holds or `timeout` passes; returns whether it held. The deadline is
/// generous, not a speed target: the suite runs hundreds of tests at once on two cores, and
/// heavy ones held every thread of the concurrency pool for 18 s at its start (measured: trivial
/// synchronous tests "took" 18 s), so a 10 s wait begun just before failed now and then.
func eventually(timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// The first element of `sequence` that satisfies `predicate`, or nil after `timeout`.
func first<S: AsyncSequence & Sendable>(
    _ sequence: S, within timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (S.Element) -> Bool
) async -> S.Element? where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            do {
                for try await element in sequence where predicate(element) { return element }
            } catch {}
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

var isRoot: Bool { getuid() == 0 }

/// A tmpfs of `size` mounted on a fresh directory (root only), to make a disk really fill up.
struct SmallDisk {
    let url: URL

    init(size: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("replica-disk-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", url.path)
    }

    /// Fills the disk to the last byte with a filler file.
    func fill() throws {
        try? Self.run("/bin/dd", "if=/dev/zero", "of=\(url.appendingPathComponent("filler").path)", "bs=64k", "status=none")
    }

    func unfill() throws { try FileManager.default.removeItem(at: url.appendingPathComponent("filler")) }

    func remove() {
        try? Self.run("/bin/umount", "-l", url.path)
        try? FileManager.default.removeItem(at: url)
    }

    /// Runs a command to its end (by `ChildProcess`: Foundation's `Process` can crash on Linux).
    static func run(_ arguments: String...) throws {
        let termination = try ChildProcess(arguments[0], Array(arguments.dropFirst())).wait()
        guard termination.isSuccess else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(arguments.joined(separator: " ")) \(termination)"])
        }
    }
}

/// A path for a directory of a test's own in the temporary directory (not created): `prefix`
/// and six random characters.
func temporaryDirectory(_ prefix: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(6))")
}
