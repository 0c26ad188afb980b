import Foundation
import Logging
import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// Serves client commands (`get`, `set`, `status`, `watch`, ...) on the node's control socket.
///
/// Owns one ROUTER socket on its own `PollLoop`; each request is answered by a task that calls
/// the replica and hands the reply back to this actor, which alone touches the socket.
///
/// Stopping goes in steps, around the replica's shutdown: `stopAccepting` (new requests are
/// refused, the socket file is removed), then, once the replica's shutdown has committed what
/// was queued, `drain` (the requests already read are answered, and every watch is told that it
/// ended), `answerLateRequests` (the socket stays open a moment for clients that found the file
/// just before it went), and `stop` (what is still queued on the socket is answered that the
/// node is shutting down, then the socket closes once what it queued has gone out).
actor ControlServer: PollLoopOwner {
    nonisolated let loop = PollLoop(name: "control")
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private let replica: Replica
    private let logger: Logger
    /// Called once the node has left the cluster (`replica-node leave`): the serving process stops.
    private let onLeave: @Sendable () -> Void
    private var socket: ZMQSocket?
    /// The socket file and its inode: removed when the node stops, if it is still this one.
    private let socketPath: String
    private var socketInode: UInt64?
    /// One watch per client, with an id so that a replaced watch's end leaves its successor be.
    private var watchers: [[UInt8]: Watcher] = [:]
    private var nextWatchID: UInt64 = 0
    /// The last message of a watch that could not be queued yet (the client's queue was full):
    /// tried again every `pendingRetry` until `giveUpAt`.
    private var pendingEnds: [[UInt8]: PendingEnd] = [:]
    /// Last messages given up on (the client read nothing for `pendingLimit`), kept for the
    /// client's next `watchCheck`, so that it learns why its watch ended rather than a guess.
    /// Bounded: the oldest are dropped past `undeliveredLimit`.
    private var undeliveredEnds: [(client: [UInt8], reply: ControlReply)] = []
    static let undeliveredLimit = 64
    /// Requests read and not answered yet.
    private var inFlight = 0
    /// False once the node is stopping: requests read from then on are refused.
    private var accepting = true
    /// When the node began to stop (`stopAccepting`).
    private var stoppedAcceptingAt: ContinuousClock.Instant?
    /// How long a stopping node still answers on its socket after removing the socket file.
    static let lateRequestGrace: Duration = .milliseconds(200)
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    private struct Watcher {
        var id: UInt64
        var task: Task<Void, Never>
    }

    private struct PendingEnd {
        var reply: ControlReply
        var giveUpAt: ContinuousClock.Instant
    }

    static let pendingRetry: Duration = .milliseconds(100)
    /// How long the last message of a watch waits for room in its client's queue.
    static let pendingLimit: Duration = .seconds(30)

    init(replica: Replica, dataDirectory: URL, context: ZMQContext, logger: Logger, onLeave: @escaping @Sendable () -> Void = {}) throws {
        self.replica = replica
        self.logger = logger
        self.onLeave = onLeave
        let path = ControlEndpoint.socketPath(in: dataDirectory)
        socketPath = path
        // A socket file left by a killed node would make bind fail; the data-directory lock
        // already proved no live node owns it.
        try? FileManager.default.removeItem(atPath: path)
        let socket = try context.socket(.router)
        try socket.setRouterMandatory()
        try socket.setMaxMessageSize(ControlEndpoint.maxDeliveredBytes)
        do {
            try socket.bind(ControlEndpoint.address(in: dataDirectory))
        } catch {
            guard [EACCES, EPERM, EROFS].contains(error.code) else { throw error }
            throw ControlSocketUnwritable(path: path, reason: String(cString: strerror(error.code)))
        }
        chmod(path, 0o600)
        socketInode = Self.inode(of: path)
        self.socket = socket
        loop.start(for: self)
    }

    deinit { loop.ownerReleased() }

    /// The control socket cannot be made in the data directory (its permissions, its owner, a
    /// read-only mount): named with what to do, as the store's files are.
    struct ControlSocketUnwritable: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String {
            "cannot create the control socket \(path): \(reason); make the data directory writable by the user the node "
                + "runs as (chown or chmod u+w)"
        }
    }

    /// Refuses the requests read from now on (the node is stopping) and removes the socket
    /// file, so that no new client connects; connected clients are still answered.
    func stopAccepting() {
        accepting = false
        stoppedAcceptingAt = .now
        removeSocketFile()
    }

    /// Keeps the socket open until `lateRequestGrace` after `stopAccepting`, answering what
    /// arrives that the node is shutting down: a client that found the socket file just before
    /// it went connects and sends a little later, and a fast shutdown would otherwise close the
    /// socket under its request (the client then sees the connection close, which says less).
    func answerLateRequests() async {
        guard let since = stoppedAcceptingAt, ContinuousClock.now < since + Self.lateRequestGrace else { return }
        try? await Task.sleep(until: since + Self.lateRequestGrace, clock: .continuous)
    }

    /// Waits until every request already read is answered and every watch has ended (each told
    /// so), or `limit` passes. Call after the replica's shutdown: its flush answers the writes
    /// those requests queued, and it finishes the change streams the watches read.
    func drain(within limit: Duration) async {
        guard !isIdle else { return }
        let timer = Task { [weak self] in
            // Cancelled once idle: then it must not resume anything.
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            await self?.resumeIdleWaiters()
        }
        await withCheckedContinuation { idleWaiters.append($0) }
        timer.cancel()
    }

    /// Ends the watches left (each told so), closes the socket once what it queued has been
    /// sent (up to a second), and removes the socket file.
    func stop() {
        for (client, watcher) in watchers {
            watcher.task.cancel()
            send(.failure(Self.stoppingFailure), to: client)
        }
        watchers.removeAll()
        retryPendingEnds(finally: true)
        if let socket {
            // Requests that arrived since the loop last read (from clients connected before the
            // socket file went): answered that the node is shutting down, not dropped with the
            // socket, which would leave their clients waiting for a reply that never comes.
            // (What libzmq has not yet taken off the connection when it closes cannot be read;
            // such a client sees the connection close, see `ControlClient.NodeStopped`.)
            accepting = false
            readRequests(from: socket)
            // The replies just queued must reach their clients: a linger, and this socket's
            // context is terminated as the socket is released below, which waits for them.
            try? socket.setLinger(.seconds(1))
            socket.close()
        }
        socket = nil
        removeSocketFile()
        resumeIdleWaiters()
    }

    /// The socket is not read while `maxInFlight` requests are being answered: what clients
    /// send meanwhile waits in libzmq's queues (and theirs, past its high-water mark), so a
    /// flood of requests has at most this many answers in the making at once (twenty
    /// concurrent `keys` of a 70 MB key set took the node to 2.5 GB). Replies already queued for
    /// a client that does not read them are libzmq's, up to its high-water mark per client.
    var pollItems: [PollItem<ControlSocket>] {
        guard inFlight < Self.maxInFlight, let socket else { return [] }
        return [PollItem(socket, role: .control)]
    }
    static let maxInFlight = 32
    var pollTimeout: Duration? { pendingEnds.isEmpty ? nil : Self.pendingRetry }

    /// The one socket this server waits on.
    enum ControlSocket: Sendable { case control }

    func pollDidReturn(ready: [ControlSocket]) {
        if !pendingEnds.isEmpty { retryPendingEnds(finally: false) }
        guard !ready.isEmpty, let socket else { return }
        readRequests(from: socket)
    }

    /// Reads every request waiting on `socket` (without blocking) and answers it, or starts
    /// the task that will; once the node is stopping, each is answered that it is.
    private func readRequests(from socket: ZMQSocket) {
        while inFlight < Self.maxInFlight || !accepting, let message = try? socket.receive(maxFrames: 2) {
            guard let client = message.frames.first else { continue }
            guard message.frames.count == 2, !message.truncated else {
                send(.failure(ControlFailure(.invalidRequest, "\(ControlFailure.malformedRequest): a request is one frame of JSON")), to: client)
                continue
            }
            guard message.frames[1].count <= ControlEndpoint.maxRequestBytes else {
                let size = message.frames[1].count
                send(.failure(ControlFailure(.invalidRequest, "the request is \(size) bytes, over the control socket's limit of "
                    + "\(ControlEndpoint.maxRequestBytes) bytes")), to: client)
                continue
            }
            guard let request = try? decoder.decode(ControlRequest.self, from: Data(message.frames[1])) else {
                send(.failure(ControlFailure(.invalidRequest, ControlFailure.malformedRequest)), to: client)
                continue
            }
            guard accepting else {
                send(.failure(Self.shuttingDownFailure), to: client)
                continue
            }
            switch request {
            case .watch(let prefix):
                startWatching(prefix: prefix, for: client)
                continue
            case .watchCheck:
                if watchers[client] != nil {
                    send(.watching, to: client)
                } else if let index = undeliveredEnds.firstIndex(where: { $0.client == client }) {
                    send(undeliveredEnds.remove(at: index).reply, to: client)
                } else {
                    send(.failure(Self.unknownWatchFailure), to: client)
                }
                continue
            default:
                break
            }
            inFlight += 1
            Task { [replica] in
                let reply: ControlReply
                do {
                    reply = try await Self.answer(request, replica: replica)
                } catch {
                    reply = .failure(ControlFailure(error))
                }
                if self.send(reply, to: client) == .full {
                    self.logger.warning("a reply to a control client was dropped: its queue is full")
                }
                if case .left(let departure) = reply, departure.left { self.onLeave() }
                self.inFlight -= 1
                self.checkIdle()
            }
        }
    }

    /// What became of a message handed to the socket.
    private enum Delivery {
        case sent
        /// The client's queue is at its high-water mark: the message was not queued.
        case full
        /// The client is gone (or the socket closed).
        case gone
    }

    @discardableResult
    private func send(_ reply: ControlReply, to client: [UInt8]) -> Delivery {
        guard let socket, let body = try? encoder.encode(reply) else { return .gone }
        do {
            return try socket.send([client, Array(body)]) ? .sent : .full
        } catch {
            // The client went away (EHOSTUNREACH with ROUTER_MANDATORY): stop its watch.
            if let watcher = watchers.removeValue(forKey: client) { watcher.task.cancel() }
            pendingEnds[client] = nil
            checkIdle()
            return .gone
        }
    }

    private func startWatching(prefix: String, for client: [UInt8]) {
        let replica = replica
        watchers.removeValue(forKey: client)?.task.cancel()
        pendingEnds[client] = nil
        undeliveredEnds.removeAll { $0.client == client }
        nextWatchID += 1
        let id = nextWatchID
        let task = Task {
            // Subscribe before reading the families the interpreter starts from: a change in
            // between is then shown (as +0, or "changed"), never missed.
            let lost = ChangeLoss()
            let changes = await replica.changes(lost: lost)
            let families: [Entry]
            do {
                families = try await replica.entries(prefix: FamilyKey.marker)
            } catch {
                self.endWatch(of: client, id: id, with: .failure(ControlFailure(error)))
                return
            }
            var interpreter = ChangeInterpreter(prefix: prefix, families: families)
            // The first reply tells the client the watch is in place.
            guard !Task.isCancelled, self.deliver(.watching, toWatch: id, of: client) else { return }
            for await change in changes {
                guard !Task.isCancelled else { return }
                // Behind by the stream's whole buffer (a burst while this task could not run):
                // ended before a change after the hole is shown, so what was shown has none.
                if lost.happened {
                    self.logger.warning("a watch fell 65,536 changes behind the node's commits: ending it (its client is told that it lost changes)")
                    self.endWatch(of: client, id: id, with: .failure(Self.fellBehindFailure))
                    return
                }
                if let watched = interpreter.interpret(change) {
                    guard self.deliver(.change(watched), toWatch: id, of: client) else { return }
                }
            }
            guard !Task.isCancelled else { return }
            // The replica stopped (a shutdown, or the stop after `leave`): so does the watch.
            self.endWatch(of: client, id: id, with: .failure(Self.stoppingFailure))
        }
        watchers[client] = Watcher(id: id, task: task)
    }

    /// Sends a message of watch `id`; false if the watch is over (the client is gone, or it did
    /// not read fast enough and was told that it lost changes).
    private func deliver(_ reply: ControlReply, toWatch id: UInt64, of client: [UInt8]) -> Bool {
        guard watchers[client]?.id == id else { return false }
        switch send(reply, to: client) {
        case .sent:
            return true
        case .gone:
            return false
        case .full:
            // Dropping this change silently would leave the client showing a state the node
            // no longer has: end the watch, saying why.
            logger.warning("a watch read too slowly and its queue filled up: ending it (its client is told that it lost changes)")
            endWatch(of: client, id: id, with: .failure(Self.lostChangesFailure))
            return false
        }
    }

    /// Ends watch `id` (if it is still the client's) with a last message: queued now, or as
    /// soon as the client's queue has room.
    private func endWatch(of client: [UInt8], id: UInt64, with reply: ControlReply) {
        guard watchers[client]?.id == id else { return }
        watchers[client] = nil
        if send(reply, to: client) == .full {
            pendingEnds[client] = PendingEnd(reply: reply, giveUpAt: .now + Self.pendingLimit)
        }
        checkIdle()
    }

    /// Tries the pending last messages again; `finally`: for the last time.
    private func retryPendingEnds(finally: Bool) {
        let now = ContinuousClock.now
        for (client, pending) in pendingEnds {
            let delivery = send(pending.reply, to: client)
            if delivery != .full || finally || now >= pending.giveUpAt {
                if delivery == .full {
                    logger.warning("the last message of a watch could not be sent: its client does not read (kept for its next check)")
                    undeliveredEnds.removeAll { $0.client == client }
                    undeliveredEnds.append((client, pending.reply))
                    if undeliveredEnds.count > Self.undeliveredLimit { undeliveredEnds.removeFirst() }
                }
                pendingEnds[client] = nil
            }
        }
        checkIdle()
    }

    private var isIdle: Bool { inFlight == 0 && watchers.isEmpty && pendingEnds.isEmpty }

    private func checkIdle() {
        if isIdle { resumeIdleWaiters() }
    }

    private func resumeIdleWaiters() {
        let waiters = idleWaiters
        idleWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func removeSocketFile() {
        // Only the file this server bound: after the replica's shutdown released the data
        // directory, another node may have bound its own there.
        guard let inode = socketInode, Self.inode(of: socketPath) == inode else { return }
        unlink(socketPath)
        socketInode = nil
    }

    private static func inode(of path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    static let shuttingDownFailure = ControlFailure(.shutDown, "the node is shutting down")
    static let stoppingFailure = ControlFailure(.shutDown, "the watch ended: the node is stopping")
    static let lostChangesFailure = ControlFailure(
        .shutDown, "the watch ended: changes were lost: it read too slowly and the node's queue for it filled up (watch again; a narrower prefix sends less)")
    static let fellBehindFailure = ControlFailure(
        .shutDown, "the watch ended: changes were lost: the node committed changes faster than it could pass them on (65,536 behind, "
            + "a burst such as a large import); every change shown before this was complete (watch again; a narrower prefix sends less)")
    static let unknownWatchFailure = ControlFailure(
        .invalidRequest, "the watch ended: the node no longer has it (it restarted since the watch began, or ended it while this client was not reading)")

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
        case .importLines(let lines), .importTypedLines(let lines):
            let batch = try Self.writes(importing: lines)
            // One batch: one transaction, one acknowledgement.
            try await replica.write(batch)
            return .written(batch.count)
        case .keys(let prefix):
            let reader = replica.reader
            return .keys(try await listing { try wholeKeyList(prefix: prefix, reader) })
        case .keysPage(let prefix, let after, let all):
            let page = LivePage(
                prefix: prefix, after: after, excludedPrefix: all ? nil : FamilyKey.marker, limit: Self.keysPerPage, maxBytes: Self.pageBytes)
            let reader = replica.reader
            let listed = try await listing { try reader.liveKeys(page) }
            return .keysPage(listed.items, next: listed.next)
        case .exportPage(let prefix, let after):
            let page = LivePage(
                prefix: prefix, after: after, excludedPrefix: FamilyKey.marker, limit: Self.entriesPerPage, maxBytes: Self.pageBytes)
            let reader = replica.reader
            let listed = try await listing { try reader.liveEntries(page) }
            return .entriesPage(listed.items.map(StoredEntry.init), next: listed.next)
        case .status:
            return .status(await replica.status())
        case .watch, .watchCheck:
            throw ControlFailure(.invalidRequest, "watch is served by the control loop")
        case .leave(let force):
            return .left(await replica.leave(force: force ?? false))
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

    /// The most keys, entries and bytes (keys and values) in one page of `keys` or `export`:
    /// the reply stays far below the client's 64 MiB limit (values travel as base64), and each
    /// page is one short read on the store's reader.
    static let keysPerPage = 10_000
    static let entriesPerPage = 1_000
    static let pageBytes = 1 << 20

    /// Runs a listing's read on the queue of listings: one at a time, on a thread of its own.
    /// SQLite reads block their thread, and the reader is one connection: 32 listings awaiting
    /// it on Swift's shared pool (2 threads on 2 cores) would hold every other task, control
    /// answers and the node's shutdown included.
    private static func listing<Listed: Sendable>(_ read: @escaping @Sendable () throws -> Listed) async throws -> Listed {
        try await withCheckedThrowingContinuation { continuation in
            listings.async { continuation.resume(with: Result { try read() }) }
        }
    }

    private static let listings = DispatchQueue(label: "replica.control.listings")

    /// Every live key under `prefix`, for a client before 0.28.0 (one reply), read a page at a
    /// time from the store's reader (not on the replica's loop, whose commits it would stall),
    /// and refused once over what the client can take, rather than built in full first.
    private static func wholeKeyList(prefix: String, _ reader: any StoreReader) throws -> [String] {
        var keys: [String] = []
        var bytes = 0
        var page = LivePage(prefix: prefix, limit: keysPerPage, maxBytes: pageBytes)
        while true {
            let listed = try reader.liveKeys(page)
            keys += listed.items
            bytes += listed.items.reduce(0) { $0 + JSONText.encodedLength(ofString: $1) + 1 }
            guard bytes <= ControlClient.maxReplyBytes else {
                throw ControlFailure(
                    .invalidRequest,
                    "the key list is over a client's \(ControlClient.maxReplyBytes >> 20) MiB reply limit: use a replica-node client of 0.28.0 "
                        + "or later (it lists keys a page at a time), or list a part at a time with --prefix")
            }
            guard let next = listed.next else { return keys }
            page.after = next
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
                writes.append(Replica.WriteRequest(key: item.key, payload: item.decoded ?? JSONScanner(line).minified(item.value), schema: item.schema))
            }
            return writes
        }
    }
}
