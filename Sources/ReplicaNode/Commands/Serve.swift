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
            and control socket in --data. Cluster sockets use CURVE (--key and --trust, peers named \
            ID@HOST:PORT so their public key ID.pub is found in the trust directory); running \
            open needs an explicit --insecure. Each option has an environment twin so that a \
            compose file needs no command line: REPLICA_ID, REPLICA_LISTEN, REPLICA_PEERS \
            (comma-separated), REPLICA_DATA, REPLICA_KEY, REPLICA_TRUST, REPLICA_INSECURE=1.

            Example:
              replica-node keygen --id node1 --out keys/    # once per node; share the .pub files
              replica-node serve --id node1 --listen 127.0.0.1:7001 --key keys/node1.key --trust keys/ \\
                --peer node2@127.0.0.1:7003 --peer node3@127.0.0.1:7005 --data /tmp/node1
            """)

    @Option(help: ArgumentHelp("This node's unique id: letters, digits, '.', '_', '-' (or $REPLICA_ID).", valueName: "id"))
    var id: String?

    @Option(help: ArgumentHelp("Address to listen on; PORT + 1 is used too (or $REPLICA_LISTEN).", valueName: "host:port"))
    var listen: String?

    @Option(name: .customLong("peer"), help: ArgumentHelp("A peer as ID@HOST:PORT (HOST:PORT with --insecure); repeat for each peer (or $REPLICA_PEERS).", valueName: "id@host:port"))
    var peers: [String] = []

    @Option(help: ArgumentHelp("This node's CURVE key file, from keygen (or $REPLICA_KEY).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("Trusted public keys: a directory of ID.pub files or a file of 'ID KEY' lines (or $REPLICA_TRUST).", valueName: "dir|file"))
    var trust: String?

    @Flag(help: "Run without encryption or authentication: anyone reaching the ports can read the data and pose as a peer (or $REPLICA_INSECURE=1).")
    var insecure = false

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
        var peerIDs: [Endpoint: String]
        var data: URL
        var keyFile: URL?
        var trustPath: URL?
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
        let keyText = key ?? environment["REPLICA_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let trustText = trust ?? environment["REPLICA_TRUST"].flatMap { $0.isEmpty ? nil : $0 }
        let open = insecure || ["1", "true", "yes"].contains(environment["REPLICA_INSECURE"]?.lowercased() ?? "")
        if open && (keyText != nil || trustText != nil) {
            throw ValidationError("--insecure cannot be combined with --key or --trust.")
        }
        if !open && (keyText == nil || trustText == nil) {
            throw ValidationError("Cluster sockets must be authenticated: pass --key FILE and --trust DIR|FILE (make keys with 'replica-node keygen'), or run open with --insecure.")
        }
        var peerEndpoints: [Endpoint] = []
        var peerIDs: [Endpoint: String] = [:]
        for text in peerTexts {
            let parts = text.split(separator: "@", maxSplits: 1).map(String.init)
            guard let peer = Endpoint(parts.last ?? "") else {
                throw ValidationError("Invalid --peer '\(text)': expected ID@HOST:PORT with PORT in 1...65534.")
            }
            if parts.count == 2 {
                guard NodeID.isValid(parts[0]) else { throw ValidationError("Invalid peer id in --peer '\(text)'.") }
                peerIDs[peer] = parts[0]
            } else if !open {
                throw ValidationError("With --key, name each peer as ID@HOST:PORT so that its key ID.pub can be found: '\(text)'.")
            }
            peerEndpoints.append(peer)
        }
        guard let dataText = data ?? environment["REPLICA_DATA"], !dataText.isEmpty else {
            throw ValidationError("Missing --data DIR (or REPLICA_DATA).")
        }
        return Settings(
            id: node, listen: endpoint, peers: peerEndpoints, peerIDs: peerIDs, data: URL(fileURLWithPath: dataText),
            keyFile: keyText.map { URL(fileURLWithPath: $0) }, trustPath: trustText.map { URL(fileURLWithPath: $0) })
    }

    /// Loads the key pair and trust list, and finds each peer's public key.
    func security(for settings: Settings) throws -> ReplicaConfiguration.Security {
        guard let keyFile = settings.keyFile, let trustPath = settings.trustPath else { return .insecure }
        let keys = try KeyFiles.readKeyPair(keyFile)
        let trusted = try KeyFiles.readTrust(trustPath)
        var peerKeys: [Endpoint: String] = [:]
        for peer in settings.peers {
            let id = settings.peerIDs[peer] ?? ""
            guard let key = trusted[id] else {
                throw KeyFiles.Invalid(message: "peer \(id)@\(peer) has no public key in \(trustPath.path) (expected \(id).pub)")
            }
            peerKeys[peer] = key
        }
        return .curve(CurveSecurity(keys: keys, trusted: Swift.Set(trusted.values), peerKeys: peerKeys))
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
        let replica: Replica
        let control: ControlServer
        do {
            try FileManager.default.createDirectory(at: settings.data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var configuration = ReplicaConfiguration(
                node: settings.id, listen: settings.listen, peers: settings.peers, storage: .directory(settings.data))
            configuration.synchronous = sync.rawValue.uppercased()
            configuration.security = try security(for: settings)
            replica = try Replica(configuration, logger: logger)
            control = try ControlServer(replica: replica, dataDirectory: settings.data, context: ZMQContext(), logger: logger)
        } catch {
            printError("cannot start: \(error)")
            throw ExitCode.failure
        }
        let status = await replica.status()
        if settings.keyFile == nil {
            logger.warning("running with --insecure: cluster traffic is neither encrypted nor authenticated")
        }
        logger.info("serving", metadata: [
            "id": "\(status.id)", "listen": "\(settings.listen)", "peers": "\(settings.peers.map(\.description).joined(separator: ","))",
            "data": "\(settings.data.path)", "security": "\(status.security)", "entries": "\(status.entryCount)", "incarnation": "\(status.incarnation)",
        ])
        for problem in status.loadErrors { logger.error("load error: \(problem.message)") }

        let signal = await SignalWaiter.waitForTermination()
        logger.info("signal \(signal): shutting down (send it again to exit at once)")
        await control.stop()
        await replica.shutdown()
    }
}
