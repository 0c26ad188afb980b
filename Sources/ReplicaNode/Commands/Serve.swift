import ArgumentParser
import Foundation
import Logging
import ReplicaCore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a node until SIGINT or SIGTERM.",
        discussion: """
            The node binds a PUB socket on PORT (updates, heartbeats) and a ROUTER socket on \
            PORT + 1 (anti-entropy sync), connects to every --peer, and keeps its SQLite database \
            and control socket in --data. Each option has an environment twin so that a compose \
            file needs no command line: REPLICA_ID, REPLICA_LISTEN, REPLICA_PEERS (comma-separated), \
            REPLICA_DATA.

            Example:
              replica-node serve --id node1 --listen 127.0.0.1:7001 \\
                --peer 127.0.0.1:7003 --peer 127.0.0.1:7005 --data /tmp/node1
            """)

    @Option(help: ArgumentHelp("This node's unique id: letters, digits, '.', '_', '-' (or $REPLICA_ID).", valueName: "id"))
    var id: String?

    @Option(help: ArgumentHelp("Address to listen on; PORT + 1 is used too (or $REPLICA_LISTEN).", valueName: "host:port"))
    var listen: String?

    @Option(name: .customLong("peer"), help: ArgumentHelp("A peer's listen address; repeat for each peer (or $REPLICA_PEERS).", valueName: "host:port"))
    var peers: [String] = []

    @Option(help: ArgumentHelp("Data directory: database, control socket, lock (or $REPLICA_DATA).", valueName: "dir"))
    var data: String?

    @Option(help: "SQLite synchronous mode: normal survives a crash of the process, full also a power cut.")
    var sync: SyncMode = .normal

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    enum SyncMode: String, ExpressibleByArgument, CaseIterable {
        case normal, full
    }

    /// The flags merged with their environment twins (a flag wins over its variable).
    struct Settings {
        var id: NodeID
        var listen: Endpoint
        var peers: [Endpoint]
        var data: URL
    }

    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        guard let idText = id ?? environment["REPLICA_ID"], !idText.isEmpty else {
            throw ValidationError("Missing --id (or REPLICA_ID).")
        }
        guard let node = NodeID(rawValue: idText) else {
            throw ValidationError("Invalid --id '\(idText)': use 1-64 letters, digits, '.', '_' or '-'.")
        }
        guard let listenText = listen ?? environment["REPLICA_LISTEN"], !listenText.isEmpty else {
            throw ValidationError("Missing --listen HOST:PORT (or REPLICA_LISTEN).")
        }
        guard let endpoint = Endpoint(listenText) else {
            throw ValidationError("Invalid --listen '\(listenText)': expected HOST:PORT with PORT in 1...65534.")
        }
        let peerTexts = peers.isEmpty
            ? (environment["REPLICA_PEERS"] ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
            : peers
        var peerEndpoints: [Endpoint] = []
        for text in peerTexts {
            guard let peer = Endpoint(text) else {
                throw ValidationError("Invalid --peer '\(text)': expected HOST:PORT with PORT in 1...65534.")
            }
            peerEndpoints.append(peer)
        }
        guard let dataText = data ?? environment["REPLICA_DATA"], !dataText.isEmpty else {
            throw ValidationError("Missing --data DIR (or REPLICA_DATA).")
        }
        return Settings(id: node, listen: endpoint, peers: peerEndpoints, data: URL(fileURLWithPath: dataText))
    }

    func validate() throws {
        _ = try settings()
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("Invalid --log-level '\(logLevel)'.") }
    }

    func run() async throws {
        let settings = try settings()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "replica.\(settings.id)")
        let lock: DataDirectoryLock
        let replica: Replica
        let control: ControlServer
        do {
            try FileManager.default.createDirectory(at: settings.data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            lock = try DataDirectoryLock(directory: settings.data)
            var configuration = ReplicaConfiguration(
                node: settings.id, listen: settings.listen, peers: settings.peers, storage: .directory(settings.data))
            configuration.synchronous = sync.rawValue.uppercased()
            replica = try Replica(configuration, logger: logger)
            control = try ControlServer(replica: replica, dataDirectory: settings.data, context: ZMQContext(), logger: logger)
        } catch {
            printError("cannot start: \(error)")
            throw ExitCode.failure
        }
        let status = await replica.status()
        logger.info("serving", metadata: [
            "id": "\(status.id)", "listen": "\(settings.listen)", "peers": "\(settings.peers.map(\.description).joined(separator: ","))",
            "data": "\(settings.data.path)", "entries": "\(status.entryCount)", "incarnation": "\(status.incarnation)",
        ])
        for problem in status.loadErrors { logger.error("load error: \(problem.message)") }

        let signal = await SignalWaiter.waitForTermination()
        logger.info("signal \(signal): shutting down (send it again to exit at once)")
        await control.stop()
        await replica.shutdown()
        withExtendedLifetime(lock) {}
    }
}
