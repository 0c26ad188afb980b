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
    private var socket: ZMQSocket?
    private var watchers: [[UInt8]: Task<Void, Never>] = [:]
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    init(replica: Replica, dataDirectory: URL, context: ZMQContext, logger: Logger) throws {
        self.replica = replica
        self.logger = logger
        let path = ControlEndpoint.socketPath(in: dataDirectory)
        // A socket file left by a killed node would make bind fail; the data-directory lock
        // already proved no live node owns it.
        try? FileManager.default.removeItem(atPath: path)
        let socket = try context.socket(.router)
        try socket.setRouterMandatory()
        try socket.setMaxMessageSize(4 << 20)
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
                send(ControlReply(error: ControlFailure(code: .invalidRequest, message: "malformed control request")), to: client)
                continue
            }
            if request.command == .watch {
                startWatching(prefix: request.prefix ?? "", for: client)
                continue
            }
            Task { [replica] in
                let reply = await Self.answer(request, replica: replica)
                self.send(reply, to: client)
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
            let changes = await replica.changes(prefix: prefix)
            // An empty first reply tells the client the watch is in place.
            self.send(ControlReply(), to: client)
            for await change in changes {
                guard !Task.isCancelled else { break }
                let from = switch change.origin {
                case .local: "local"
                case .remote(let node): node.rawValue
                }
                self.send(ControlReply(change: ChangeView(entry: EntryView(change.entry), from: from)), to: client)
            }
        }
    }

    private static func answer(_ request: ControlRequest, replica: Replica) async -> ControlReply {
        do {
            switch request.command {
            case .get:
                let key = try required(request.key, "key")
                guard let entry = try await replica.entry(for: key), !entry.isTombstone else {
                    throw ControlFailure(code: .unknownKey, message: "unknown key: \(key)")
                }
                return ControlReply(entry: EntryView(entry))
            case .set:
                let key = try required(request.key, "key")
                let text = try required(request.value, "value")
                guard isJSON(text) else { throw ControlFailure(code: .invalidValue, message: "invalid JSON value: \(text)") }
                return ControlReply(entry: EntryView(try await replica.write(key, payload: Array(text.utf8))))
            case .delete:
                let key = try required(request.key, "key")
                guard let entry = try await replica.entry(for: key), !entry.isTombstone else {
                    throw ControlFailure(code: .unknownKey, message: "unknown key: \(key)")
                }
                return ControlReply(entry: EntryView(try await replica.write(key, payload: nil)))
            case .setMany:
                let items = request.items ?? []
                for item in items where !isJSON(item.value) {
                    throw ControlFailure(code: .invalidValue, message: "invalid JSON value for \(item.key): \(item.value)")
                }
                // One batch: one transaction, one acknowledgement.
                try await replica.write(items.map { Replica.WriteRequest(key: $0.key, payload: Array($0.value.utf8)) })
                return ControlReply(written: items.count)
            case .keys:
                return ControlReply(keys: try await replica.keys(prefix: request.prefix ?? ""))
            case .status:
                return ControlReply(status: await replica.status())
            case .watch:
                throw ControlFailure(code: .invalidRequest, message: "watch is handled by the server loop")
            case .incr, .counter, .drinkAdd, .drinkList, .drinkRemove:
                return try await answerFamily(request, replica: replica)
            }
        } catch let failure as ControlFailure {
            return ControlReply(error: failure)
        } catch let error as ReplicaError {
            let code: ControlFailure.Code = switch error {
            case .saveFailed, .clockSkew: .saveFailed
            case .shutDown: .shutDown
            case .invalidKey, .valueTooLarge: .invalidValue
            }
            return ControlReply(error: ControlFailure(code: code, message: error.description))
        } catch {
            return ControlReply(error: ControlFailure(code: .internalError, message: "\(error)"))
        }
    }

    private static func isJSON(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil
    }

    static func required(_ value: String?, _ name: String) throws -> String {
        guard let value else { throw ControlFailure(code: .invalidRequest, message: "missing \(name)") }
        return value
    }
}
