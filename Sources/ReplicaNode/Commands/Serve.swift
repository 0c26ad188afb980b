import ArgumentParser
import Foundation
import Logging
import ReplicaCore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a node until SIGINT, SIGTERM, SIGHUP or SIGQUIT.",
        discussion: """
            The node binds a PUB socket on PORT (updates, heartbeats) and a ROUTER socket on \
            PORT + 1 (sync, repairs, membership), and keeps its SQLite database and control \
            socket in --data. Each --peer is a seed: one reachable member is enough, the others \
            are learnt from it, and listing the node itself is harmless. --advertise is the \
            address members dial (behind NAT, in containers, through a proxy). --discover finds \
            members on the LAN segment by UDP broadcast (port 7070, or --discover=PORT). Cluster \
            sockets use CURVE (--key and --trust; seeds named ID@HOST:PORT so that their key \
            ID.pub is found in the trust directory, re-read every 2 s: copy a .pub there to trust \
            a new node without a restart); running open needs an explicit --insecure. --metrics \
            serves Prometheus metrics at http://HOST:PORT/metrics. Each option has an environment \
            twin: REPLICA_ID, REPLICA_LISTEN, REPLICA_PEERS (comma-separated), REPLICA_ADVERTISE, \
            REPLICA_DISCOVER (1 or a port), REPLICA_DATA, REPLICA_KEY, REPLICA_TRUST, \
            REPLICA_INSECURE=1, REPLICA_METRICS. Seeds need not be up yet.

            Examples:
              for n in 1 2 3; do replica-node keygen --id node$n --out keys/; done
              replica-node serve --id node1 --listen 127.0.0.1:7001 --data node1 \\
                --key keys/node1.key --trust keys/ --metrics 127.0.0.1:9101 \\
                --peer node2@127.0.0.1:7003 --peer node3@127.0.0.1:7005
              replica-node serve --id solo --listen 127.0.0.1:7011 --insecure --data solo
            """)

    @Option(help: ArgumentHelp("This node's unique id: letters, digits, '.', '_', '-' (or $REPLICA_ID).", valueName: "id"))
    var id: String?

    @Option(help: ArgumentHelp("Address to listen on; PORT + 1 is used too (or $REPLICA_LISTEN).", valueName: "host:port"))
    var listen: String?

    @Option(name: .customLong("peer"), help: ArgumentHelp("A seed: a member to join through, as ID@HOST:PORT (HOST:PORT with --insecure); repeat for more (or $REPLICA_PEERS).", valueName: "id@host:port"))
    var peers: [String] = []

    @Option(help: ArgumentHelp("The address members dial to reach this node; default the --listen address (or $REPLICA_ADVERTISE).", valueName: "host:port"))
    var advertise: String?

    @Flag(help: "Find members on this LAN segment by UDP broadcast beacons, on port 7070 or --discover=PORT (or $REPLICA_DISCOVER=1|PORT).")
    var discover = false

    @Option(name: .customLong("discover-port"), help: .hidden)
    var discoverPort: UInt16?

    @Option(help: ArgumentHelp("This node's CURVE key file, from keygen (or $REPLICA_KEY).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("Trusted public keys: a directory of ID.pub files or a file of 'ID KEY' lines (or $REPLICA_TRUST).", valueName: "dir|file"))
    var trust: String?

    @Flag(help: "Run without encryption or authentication: anyone reaching the ports can read the data and pose as a peer (or $REPLICA_INSECURE=1).")
    var insecure = false

    @Option(help: ArgumentHelp("Data directory: database, control socket, lock (or $REPLICA_DATA).", valueName: "dir"))
    var data: String?

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics (or $REPLICA_METRICS).", valueName: "host:port"))
    var metrics: String?

    @Flag(help: "Publish every update as a message of its own, never as a batch: for a rolling upgrade from nodes that predate batches (docs/protocol.md, \"Mixed versions\").")
    var singleUpdates = false
    @Flag(help: "Refuse writes until this node's clock has been compared with a member's since start, instead of accepting them after 3 s with no member reached (docs/operations.md, \"Clocks\").")
    var requireClockCheck = false

    @Option(help: "SQLite synchronous mode: normal survives a crash of the process, full also a power cut.")
    var sync: SyncMode = .normal

    @Option(help: ArgumentHelp(
        "How long a sync (or repair) waits for each chunk of a member's reply before it is asked again; after each timeout in a row the wait doubles, to at most 4 x this. Behind a link too slow to carry 1 MiB in 4 x this (a `sync` problem in status says so), raise it on the node behind the link (and on the members it syncs from if they run 0.22 or older: they give up a reply they cannot send for as long).",
        valueName: "seconds"))
    var syncChunkTimeout: Double = 10

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: ArgumentHelp(
        "Stop (gracefully) once process PID is no longer this node's parent, even if it was killed with SIGKILL: for a supervisor that starts nodes (`cluster` passes its own PID).",
        valueName: "pid"))
    var parent: Int32?

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
        var metrics: Endpoint?
        var advertise: Endpoint?
        var discoveryPort: UInt16?
    }

    /// The UDP port of discovery beacons when --discover names none.
    static let defaultDiscoveryPort: UInt16 = 7070

    /// `--discover=PORT` as ArgumentParser takes it (`--discover --discover-port PORT`): a flag
    /// with an optional value is not something it parses.
    static func expandingDiscoverValue(_ arguments: [String]) -> [String] {
        arguments.flatMap { argument -> [String] in
            guard argument.hasPrefix("--discover=") else { return [argument] }
            return ["--discover", "--discover-port", String(argument.dropFirst("--discover=".count))]
        }
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
        guard var endpoint = Endpoint(listenText) else {
            throw ValidationError("Invalid --listen '\(listenText)': expected HOST:PORT with PORT in 1...65534.")
        }
        // libzmq binds an address or an interface name, not a host name ("localhost" failed
        // with "No such device", after the data directory was made): resolve names here.
        guard let bindable = Self.bindableHost(endpoint.host) else {
            throw ValidationError("Invalid --listen '\(listenText)': '\(endpoint.host)' is not an IP address, an interface "
                + "or a name this machine resolves to an IPv4 address; give an IP address (0.0.0.0 listens on every interface).")
        }
        // Debian maps the machine's own name to 127.0.1.1: "--listen myhost:7000" would listen
        // (and be advertised) on loopback, out of reach of members on other machines.
        if bindable != endpoint.host, bindable.hasPrefix("127."), endpoint.host.lowercased() != "localhost" {
            throw ValidationError("Invalid --listen '\(listenText)': '\(endpoint.host)' resolves to \(bindable), a loopback "
                + "address other machines cannot reach; give the address to listen on (0.0.0.0 for every interface), or "
                + "\(bindable) if loopback is meant.")
        }
        endpoint.host = bindable
        let peerTexts = peers.isEmpty
            ? (environment["REPLICA_PEERS"] ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
            : peers
        // A flag wins over a variable, both ways: --insecure over REPLICA_KEY and REPLICA_TRUST,
        // --key or --trust over REPLICA_INSECURE (below).
        let keyText = key ?? (insecure ? nil : environment["REPLICA_KEY"].flatMap { $0.isEmpty ? nil : $0 })
        let trustText = trust ?? (insecure ? nil : environment["REPLICA_TRUST"].flatMap { $0.isEmpty ? nil : $0 })
        let insecureFromEnvironment = ["1", "true", "yes"].contains(environment["REPLICA_INSECURE"]?.lowercased() ?? "")
        let open = insecure || (insecureFromEnvironment && key == nil && trust == nil)
        if open && (keyText != nil || trustText != nil) {
            throw ValidationError(insecure
                ? "--insecure cannot be combined with --key or --trust."
                : "REPLICA_INSECURE cannot be combined with REPLICA_KEY or REPLICA_TRUST.")
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
        var metricsEndpoint: Endpoint?
        if let metricsText = metrics ?? environment["REPLICA_METRICS"].flatMap({ $0.isEmpty ? nil : $0 }) {
            guard let parsed = Endpoint(singlePort: metricsText) else {
                throw ValidationError("Invalid --metrics '\(metricsText)': expected HOST:PORT with PORT in 1...65535.")
            }
            metricsEndpoint = parsed
        }
        var advertised: Endpoint?
        if let text = advertise ?? environment["REPLICA_ADVERTISE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            guard let parsed = Endpoint(text), !parsed.isWildcard else {
                throw ValidationError("Invalid --advertise '\(text)': expected the HOST:PORT members dial (not a wildcard).")
            }
            advertised = parsed
        } else if endpoint.isWildcard {
            // Every interface: members dial the host name (a container's service name), unless told.
            advertised = Endpoint(host: ProcessInfo.processInfo.hostName, port: endpoint.port)
        }
        var discoveryPort: UInt16?
        let discoverText = environment["REPLICA_DISCOVER"].flatMap { $0.isEmpty ? nil : $0.lowercased() }
        if discover || discoverPort != nil {
            discoveryPort = discoverPort ?? Self.defaultDiscoveryPort
        } else if let discoverText, !["0", "false", "no"].contains(discoverText) {
            guard ["1", "true", "yes"].contains(discoverText) || UInt16(discoverText) != nil else {
                throw ValidationError("Invalid REPLICA_DISCOVER '\(discoverText)': expected 1 or a UDP port.")
            }
            discoveryPort = UInt16(discoverText) ?? Self.defaultDiscoveryPort
        }
        if discoveryPort == 0 { throw ValidationError("Invalid --discover port 0.") }
        let socketPath = ControlEndpoint.socketPath(in: URL(fileURLWithPath: dataText))
        guard socketPath.utf8.count <= ControlEndpoint.maxSocketPathBytes else {
            throw ValidationError("The data directory's path is too long: its control socket \(socketPath) is "
                + "\(socketPath.utf8.count) bytes, and a Unix socket's path may hold \(ControlEndpoint.maxSocketPathBytes). "
                + "Use a shorter --data path (or a shorter symbolic link to it).")
        }
        return Settings(
            id: node, listen: endpoint, peers: peerEndpoints, peerIDs: peerIDs, data: URL(fileURLWithPath: dataText),
            keyFile: keyText.map { URL(fileURLWithPath: $0) }, trustPath: trustText.map { URL(fileURLWithPath: $0) },
            metrics: metricsEndpoint, advertise: advertised, discoveryPort: discoveryPort)
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
        return .curve(CurveSecurity(keys: keys, trusted: Set(trusted.values), peerKeys: peerKeys, keyOwners: Self.owners(trusted)))
    }

    /// Which node each trusted key belongs to (trust sources name keys by node id).
    static func owners(_ trusted: [String: String]) -> [String: NodeID] {
        var owners: [String: NodeID] = [:]
        for (id, key) in trusted { if let node = NodeID(rawValue: id) { owners[key] = node } }
        return owners
    }

    /// Re-reads the trust directory or file every 2 s and hands changes to the replica, so that
    /// trust is extended (or withdrawn) without a restart. A `.pub` file (or line) that holds no
    /// valid key is listed as a `trust` problem and keeps the key it held at the last read (if
    /// any), and the others apply: a broken file must not hold back the revocation of another
    /// key, nor revoke its own while it is being rewritten. A trust path that cannot be read
    /// at all keeps the trust as it was, listed the same way.
    static func watchTrust(_ path: URL, replica: Replica, logger: Logger) async {
        var last: [String: String]?
        while !Task.isCancelled {
            do {
                let read = try KeyFiles.readTrust(path, skippingBadEntries: true)
                // A file being rewritten reads as broken for a moment: the key it held before
                // stays trusted (removing the file is what revokes it).
                var trusted = read.trusted
                for id in read.skippedIDs { if let key = last?[id] { trusted[id] = key } }
                if trusted != last {
                    if last != nil { logger.info("trust \(path.path) changed: \(trusted.count) key(s)") }
                    await replica.updateTrust(trusted: Set(trusted.values), keyOwners: owners(trusted))
                    last = trusted
                }
                await replica.noteTrustSource(path.path, problem: read.skipped.isEmpty ? nil
                    : read.skipped.joined(separator: "; ") + " (a key it held before stays trusted until it is fixed or removed; "
                        + "the other keys apply)")
            } catch {
                await replica.noteTrustSource(path.path, problem: "cannot be read: \(error); the trust read before is kept until it can")
            }
            try? await Task.sleep(for: .seconds(2))
        }
    }

    func validate() throws {
        _ = try settings()
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("Invalid --log-level '\(logLevel)'.") }
        guard syncChunkTimeout.isFinite, (1...3600).contains(syncChunkTimeout) else {
            throw ValidationError("Invalid --sync-chunk-timeout \(syncChunkTimeout): give seconds from 1 to 3600.")
        }
        // Checked here, at once: a wrong PID (a shell that execs the node passes the node's own)
        // would otherwise look like a parent gone, and stop the node with exit 0.
        if let parent, parent != getppid() {
            throw ValidationError("--parent \(parent): process \(parent) is not this node's parent (its parent is process \(getppid())); give the PID of the process that starts the node, or leave --parent out.")
        }
    }

    func run() async throws {
        // Signals first: one during start-up is a graceful stop as well (exit 0), not a kill
        // with whatever was started left half-way.
        let (ending, endings) = AsyncStream.makeStream(of: Ending.self)
        let stopping = ReceivedSignal()
        let stop: @Sendable (Int32) -> Void = { signal in
            stopping.record(signal)
            endings.yield(.signal(signal))
        }
        SignalWaiter.handleTermination(stop)
        let settings = try settings()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "replica.\(settings.id)")
        if let parent {
            ParentWatch.start(parent: parent) {
                // A graceful stop, as a SIGTERM gets, but not counted as a signal: a node already
                // stopping (its cluster asked, then was killed) finishes that stop rather than
                // exit at once as at a second signal.
                guard stopping.signal == nil else { return }
                logger.warning("process \(parent), which started this node, is gone (its parent is now process \(getppid())): stopping")
                stop(SIGTERM)
            }
        }
        if let port = settings.discoveryPort, let problem = Self.discoveryProblem(listen: settings.listen) {
            logger.warning("--discover cannot work on \(settings.listen.host): \(problem); no beacon is sent (UDP port \(port)), so members are found only through --peer seeds")
        }
        let replica: Replica
        let control: ControlServer
        var metricsServer: MetricsServer?
        // The directories this start made (the data directory, and parents it lacked).
        var created: [URL] = []
        // Shut down if the start fails after it (the control socket cannot be made): its store
        // then records a clean stop, and the next start keeps its counter slots.
        var startedReplica: Replica?
        do {
            // What can be refused without touching the data directory comes first (key and
            // trust files, the metrics address), so such a refusal creates nothing.
            let security = try security(for: settings)
            if let keyFile = settings.keyFile, let warning = KeyFiles.exposure(of: keyFile) { logger.warning("\(warning)") }
            if let endpoint = settings.metrics {
                // The backend first: the replica makes its commit metrics when it starts.
                let registry = MetricsServer.bootstrapMetrics()
                do {
                    metricsServer = try await MetricsServer(endpoint: endpoint, registry: registry)
                } catch {
                    throw MetricsUnavailable(endpoint: endpoint, reason: MetricsServer.reason(error))
                }
            }
            if let signal = stopping.signal {
                // Nothing of the node exists yet: nothing to shut down, no data directory touched.
                logger.info("signal \(signal) during start-up: stopping before the replica started")
                await metricsServer?.stop()
                return
            }
            created = try Self.createDataDirectory(settings.data)
            var configuration = ReplicaConfiguration(
                node: settings.id, listen: settings.listen, peers: settings.peers, storage: .directory(settings.data))
            configuration.advertise = settings.advertise
            configuration.limits = ControlEndpoint.replicaLimits
            configuration.discoveryPort = settings.discoveryPort
            configuration.synchronous = sync.rawValue.uppercased()
            configuration.batchesUpdates = !singleUpdates
            configuration.requireClockCheck = requireClockCheck
            configuration.syncTimeout = .milliseconds(Int64(syncChunkTimeout * 1000))
            configuration.security = security
            replica = try Replica(configuration, logger: logger)
            startedReplica = replica
            if let signal = stopping.signal {
                // The replica exists, the control socket not yet: shut the replica down (it
                // releases the data directory) and stop.
                logger.info("signal \(signal) during start-up: shutting down")
                await replica.shutdown()
                await metricsServer?.stop()
                return
            }
            control = try ControlServer(replica: replica, dataDirectory: settings.data, context: ZMQContext(), logger: logger) {
                endings.yield(.left)
            }
        } catch {
            await startedReplica?.shutdown()
            await metricsServer?.stop()
            // A directory made by this start and still empty (the store was never opened in it)
            // goes again; rmdir removes nothing else, and no directory that was there before.
            Self.removeIfEmpty(created)
            // A file that cannot be read or made says so itself ("cannot read key file ...").
            Output.error(error is FileProblem ? "\(error)" : "cannot start: \(error)")
            throw ExitCode.failure
        }
        let reporter = metricsServer.map { _ in Task { await ReplicaMetricsReporter.run(for: replica) } }
        let trustWatcher = settings.trustPath.map { path in Task { await Self.watchTrust(path, replica: replica, logger: logger) } }
        let status = await replica.status()
        if settings.keyFile == nil {
            logger.warning("running with --insecure: cluster traffic is neither encrypted nor authenticated")
        }
        logger.info("serving", metadata: [
            "id": "\(status.id)", "listen": "\(settings.listen)", "peers": "\(settings.peers.map(\.description).joined(separator: ","))",
            "data": "\(settings.data.path)", "security": "\(status.security)", "entries": "\(status.entryCount)", "incarnation": "\(status.incarnation)",
            "metrics": "\(metricsServer?.localAddress.map { "\($0)" } ?? "off")",
        ])
        for problem in status.loadErrors { logger.error("load error: \(problem.message)") }

        var reason = Ending.left
        for await first in ending {
            reason = first
            break
        }
        switch reason {
        case .signal(let signal): logger.info("signal \(signal): shutting down (send it again to exit at once)")
        case .left: logger.info("left the cluster: stopping")
        }
        trustWatcher?.cancel()
        reporter?.cancel()
        await metricsServer?.stop()
        // New requests are refused from here; those already read are answered after the
        // replica's shutdown committed what they queued, then the control socket closes. (Closing
        // it first dropped the replies of writes the shutdown still committed: a client saw a
        // failure for a write that was kept, and a retrying script counted it twice.)
        await control.stopAccepting()
        await replica.shutdown()
        await control.drain(within: .seconds(5))
        await control.answerLateRequests()
        await control.stop()
    }

    /// Creates `directory` (mode 0700, with its missing parents) and returns the directories it
    /// made, the deepest first.
    static func createDataDirectory(_ directory: URL) throws -> [URL] {
        var missing: [URL] = []
        var candidate = directory.standardizedFileURL
        while !FileManager.default.fileExists(atPath: candidate.path) && candidate.path != "/" {
            missing.append(candidate)
            candidate = candidate.deletingLastPathComponent()
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            removeIfEmpty(missing)
            throw FileProblem(action: "cannot create data directory", path: directory.relativePath, error: error)
        }
        return missing
    }

    /// Removes `directories` (the deepest first) while they are empty.
    static func removeIfEmpty(_ directories: [URL]) {
        for directory in directories {
            guard rmdir(directory.path) == 0 || errno == ENOENT else { return }
        }
    }

    /// `host` as libzmq can bind it: an IP address, `*` or an interface name as given, a host
    /// name as its first IPv4 address; nil when it is none of these.
    static func bindableHost(_ host: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if host == "*" || inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 || if_nametoindex(host) != 0 {
            return host
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(first) }
        var addresses: [(family: Int32, text: String)] = []
        for info in sequence(first: first, next: { $0.pointee.ai_next }) {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            addresses.append((info.pointee.ai_family, String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        // IPv4 only: sockets here do not enable IPv6, so a name that resolves to IPv6 alone
        // would fail at bind.
        return addresses.first { $0.family == AF_INET }?.text
    }

    /// Why `--discover` on `listen` sends no beacon, or nil if there is a broadcast address to
    /// send them to. Beacons go to the broadcast address of the interface holding the listen
    /// address (every interface for a wildcard); loopback and point-to-point interfaces have none.
    static func discoveryProblem(listen: Endpoint) -> String? {
        // Where the replica's beacon socket would send (see `Replica.init`), asked the same way.
        guard UDPBeaconSocket.broadcastAddresses(interfaceAddress: listen.host).isEmpty else { return nil }
        let host = listen.host
        if Endpoint.isWildcard(host: host) { return "no IPv4 interface that is up can broadcast" }
        if host == "localhost" || host.hasPrefix("127.") {
            return "it is a loopback address, and a loopback interface has no broadcast address"
        }
        if host.split(separator: ".").count != 4 || host.contains(where: { !"0123456789.".contains($0) }) {
            return "beacons are IPv4 broadcasts sent on the interface holding the listen address, so it must be an IPv4 address (or 0.0.0.0), not a host name or an IPv6 address"
        }
        return "no interface that is up and can broadcast holds this address"
    }

    /// Why the serving stops.
    enum Ending: Sendable {
        case signal(Int32)
        /// `replica-node leave` ran.
        case left
    }

    struct MetricsUnavailable: Error, CustomStringConvertible {
        var endpoint: Endpoint
        var reason: String
        var description: String { "--metrics \(endpoint): \(reason)" }
    }
}
