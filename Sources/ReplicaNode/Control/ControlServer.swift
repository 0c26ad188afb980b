import Foundation
import Logging
import ReplicaCore

/// Serves client commands (`get`, `set`, `status`, `watch`, ...) on the node's control socket.
///
/// Owns one ROUTER socket on its own `PollLoop`; each request is answered by a task that calls
/// the replica and hands the reply back to this actor, which alone touches the socket.
actor ControlServer: PollLoopOwner {
    nonisolated let loop = PollLoop(name: "control")
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private let replica: Replica
    private let logger: Logger
    /// Called once the node has left the cluster (`replica-node leave`): the serving process stops.
    private let onLeave: @Sendable () -> Void
    private var socket: ZMQSocket?
    private var watchers: [[UInt8]: Task<Void, Never>] = [:]
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    init(replica: Replica, dataDirectory: URL, context: ZMQContext, logger: Logger, onLeave: @escaping @Sendable () -> Void = {}) throws {
        self.replica = replica
        self.logger = logger
        self.onLeave = onLeave
        let path = ControlEndpoint.socketPath(in: dataDirectory)
        // A socket file left by a killed node would make bind fail; the data-directory lock
        // already proved no live node owns it.
        try? FileManager.default.removeItem(atPath: path)
        let socket = try context.socket(.router)
        try socket.setRouterMandatory()
        try socket.setMaxMessageSize(ControlEndpoint.maxRequestBytes)
        try socket.bind(ControlEndpoint.address(in: dataDirectory))
        chmod(path, 0o600)
        self.socket = socket
        loop.start(for: self)
    }

    deinit { loop.ownerReleased() }

    func stop() {
        for task in watchers.values { task.cancel() }
        watchers.removeAll()
        socket?.close()
        socket = nil
    }

    var pollItems: [PollItem<ControlSocket>] { socket.map { [PollItem($0, role: .control)] } ?? [] }
    var pollTimeout: Duration? { nil }

    /// The one socket this server waits on.
    enum ControlSocket: Sendable { case control }

    func pollDidReturn(ready: [ControlSocket]) {
        guard !ready.isEmpty, let socket else { return }
        while let message = try? socket.receive(maxFrames: 2) {
            guard message.frames.count == 2, !message.truncated else { continue }
            let client = message.frames[0]
            guard let request = try? decoder.decode(ControlRequest.self, from: Data(message.frames[1])) else {
                send(.failure(ControlFailure(.invalidRequest, "malformed control request")), to: client)
                continue
            }
            if case .watch(let prefix) = request {
                startWatching(prefix: prefix, for: client)
                continue
            }
            Task { [replica] in
                let reply: ControlReply
                do {
                    reply = try await Self.answer(request, replica: replica)
                } catch {
                    reply = .failure(ControlFailure(error))
                }
                self.send(reply, to: client)
                if case .left = reply { self.onLeave() }
            }
        }
    }

    private func send(_ reply: ControlReply, to client: [UInt8]) {
        guard let socket, let body = try? encoder.encode(reply) else { return }
        do {
            try socket.send([client, Array(body)])
        } catch {
            // The client went away (EHOSTUNREACH with ROUTER_MANDATORY): stop its watch.
            watchers.removeValue(forKey: client)?.cancel()
        }
    }

    private func startWatching(prefix: String, for client: [UInt8]) {
        let replica = replica
        watchers[client]?.cancel()
        watchers[client] = Task {
            // Subscribe before reading the families the interpreter starts from: a change in
            // between is then shown (as +0, or "changed"), never missed.
            let changes = await replica.changes()
            let families: [Entry]
            do {
                families = try await replica.entries(prefix: FamilyKey.marker)
            } catch {
                self.send(.failure(ControlFailure(error)), to: client)
                return
            }
            var interpreter = ChangeInterpreter(prefix: prefix, families: families)
            // The first reply tells the client the watch is in place.
            self.send(.watching, to: client)
            for await change in changes {
                guard !Task.isCancelled else { break }
                if let watched = interpreter.interpret(change) { self.send(.change(watched), to: client) }
            }
        }
    }

    /// The answer to every request but `watch` (served by the loop itself).
    private static func answer(_ request: ControlRequest, replica: Replica) async throws -> ControlReply {
        switch request {
        case .get(let key):
            return .entry(StoredEntry(try liveEntry(key, replica)))
        case .set(let key, let json):
            try refuseReserved(key)
            guard let value = JSONText.minified(Array(json.utf8)) else {
                throw ControlFailure(.invalidValue, "invalid JSON value: \(json)")
            }
            return .entry(StoredEntry(try await replica.write(key, payload: value)))
        case .delete(let key):
            try refuseReserved(key)
            _ = try liveEntry(key, replica)
            return .entry(StoredEntry(try await replica.write(key, payload: nil)))
        case .importLines(let lines):
            let batch = try Self.writes(importing: lines)
            // One batch: one transaction, one acknowledgement.
            try await replica.write(batch)
            return .written(batch.count)
        case .keys(let prefix):
            return .keys(try await replica.keys(prefix: prefix))
        case .status:
            return .status(await replica.status())
        case .watch:
            throw ControlFailure(.invalidRequest, "watch is served by the control loop")
        case .leave:
            return .left(acknowledged: await replica.leave())
        case .forget(let name):
            guard let node = NodeID(rawValue: name) else { throw ControlFailure(.invalidValue, "invalid node id '\(name)'") }
            try await replica.forget(node)
            return .forgotten(node: name)
        case .health:
            return .health(await replica.health())
        case .incr, .counter, .addDrink, .listDrinks, .removeDrink:
            return try await answerFamily(request, replica: replica)
        }
    }

    /// The committed, live entry of `key`, or an unknown-key failure. Read straight from the
    /// store's reader, so a `get` never waits behind the replica's commits (an import, a sync).
    private static func liveEntry(_ key: String, _ replica: Replica) throws -> Entry {
        guard let entry = try replica.reader.entry(for: key), !entry.isTombstone else {
            throw ControlFailure(.unknownKey, "unknown key: \(key)")
        }
        return entry
    }

    private static func refuseReserved(_ key: String) throws {
        if FamilyKey.isReserved(key) { throw ControlFailure(.invalidValue, ReservedKey.message) }
    }

    /// The writes of a batch of JSON Lines (checked again here: the socket is an interface).
    static func writes(importing lines: Data) throws -> [Replica.WriteRequest] {
        try lines.withUnsafeBytes { raw throws(JSONLines.BadLine) in
            var writes: [Replica.WriteRequest] = []
            try JSONLines.forEachItem(in: raw.bindMemory(to: UInt8.self)) { item, line in
                writes.append(Replica.WriteRequest(key: item.key, payload: JSONScanner(line).minified(item.value)))
            }
            return writes
        }
    }
}
