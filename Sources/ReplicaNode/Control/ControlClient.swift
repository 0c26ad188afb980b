import Foundation
import ReplicaCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Talks to the node serving a data directory, for the client commands.
struct ControlClient {
    /// Why a client command could not reach its node.
    struct Unreachable: Error, CustomStringConvertible {
        var message: String
        /// Set when the request was a change the node may have applied before it went quiet.
        var unansweredChange = false
        var description: String {
            unansweredChange ? message + "; the change may or may not have been applied: \(ControlClient.readBack)" : message
        }
    }

    /// What an operator should do about a change left unanswered.
    static let readBack = "read it back before repeating it (a repeated incr counts twice)"

    let dataDirectory: URL
    let context: ZMQContext
    let socket: ZMQSocket
    /// The connection's events (`events`), watched while a reply is awaited.
    private let monitor: ZMQSocket
    /// Set once the monitor reports the connection closed, and kept: a reply read in the same
    /// wait must not make a later `receive` (several requests in flight) forget it.
    private let closedSeen = ClosedFlag()

    /// Shared by copies of the client, as its connection is.
    private final class ClosedFlag: Sendable {
        let value = Mutex(false)
    }
    var timeout: Duration = .seconds(5)
    /// Whether `receive` gives up as soon as the node closes the connection (see
    /// `NodeStopped`). `watch` turns it off: it tells a stopped node from a restarted one itself.
    var endsWhenDisconnected = true

    /// libzmq's ZMQ_EVENT_CONNECT_RETRIED: a connect attempt failed (no socket file, refused).
    private static let connectRetried: ZMQSocket.MonitorEvent = .other(0x0004)
    /// The connection events the client follows.
    private static let events: [ZMQSocket.MonitorEvent] = [.handshakeSucceeded, .disconnected, .handshakeFailed, connectRetried]

    /// Connects, failing at once (not after a timeout) when no node serves the directory.
    ///
    /// The connection is made before any request is sent: a node that stops between the
    /// check of its socket file and libzmq's connect (it removes the file first thing) would
    /// otherwise leave the request queued for a connection that never comes, and the client
    /// waiting for its timeout. Now that is "no replica-node is serving", and nothing was sent.
    init(dataDirectory: URL) throws {
        self.dataDirectory = dataDirectory
        let path = ControlEndpoint.socketPath(in: dataDirectory)
        var info = stat()
        if stat(path, &info) != 0 {
            let error = errno
            if error == EACCES { throw Self.denied(dataDirectory, path) }
            throw Unreachable(message: "no replica-node is serving \(dataDirectory.path) (no control socket at \(path))")
        }
        switch Self.probe(path) {
        case .listening: break
        case .notListening:
            throw Unreachable(message: "no replica-node is serving \(dataDirectory.path) (stale control socket; the node is not running)")
        case .denied:
            throw Self.denied(dataDirectory, path)
        }
        context = try ZMQContext()
        socket = try context.socket(.dealer)
        try socket.setMaxMessageSize(Self.maxReplyBytes)
        monitor = try socket.monitor(Self.events)
        try socket.connect(ControlEndpoint.address(in: dataDirectory))
        try waitUntilConnected(path: path)
    }

    /// Waits for the connection's handshake; throws `Unreachable` if the node turns out to be
    /// gone (its socket file removed or no longer listening) or does not answer within `timeout`.
    private func waitUntilConnected(path: String) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - .now
            guard left > .zero, try monitor.waitUntilReadable(timeout: left) else {
                // Connected by the kernel, not by the node (a node frozen by SIGSTOP, or far
                // too busy): nothing was sent, so nothing can have been applied.
                throw Unreachable(message: notAnswering.message + " (it did not take the connection; nothing was sent)")
            }
            guard let event = try monitor.receiveMonitorEvent() else { continue }
            switch event {
            case .handshakeSucceeded:
                return
            case .disconnected, .handshakeFailed:
                throw stoppedBeforeConnecting
            default:
                // A failed attempt (libzmq tries again): over if the node is gone, else a
                // passing refusal (a full listen backlog) and the retry is awaited.
                guard Self.isListening(path) else { throw stoppedBeforeConnecting }
            }
        }
    }

    private var stoppedBeforeConnecting: Unreachable {
        Unreachable(message: "no replica-node is serving \(dataDirectory.path) (the node stopped; nothing was sent)")
    }

    /// The largest reply taken: libzmq closes the connection of a larger one.
    static let maxReplyBytes = 64 << 20

    /// Whether the node still listens on its control socket.
    var nodeIsListening: Bool { Self.isListening(ControlEndpoint.socketPath(in: dataDirectory)) }

    private static func isListening(_ path: String) -> Bool { probe(path) != .notListening }

    /// What a `connect()` to the control socket says.
    enum Probe: Equatable {
        case listening
        /// Refused, or the file is gone: nobody listens.
        case notListening
        /// This user may not use the socket (EACCES, EPERM): the node may well be running.
        case denied
    }

    /// A client of another user than the node's: told so, not that no node runs. (The socket
    /// was called stale, and an operator who deleted it cut every client off a healthy node.)
    static func denied(_ dataDirectory: URL, _ path: String) -> Unreachable {
        var info = stat()
        let owner: String
        if stat(path, &info) == 0 || stat(dataDirectory.path, &info) == 0, let entry = getpwuid(info.st_uid) {
            owner = " (it belongs to \(String(cString: entry.pointee.pw_name)): run the command as that user)"
        } else {
            owner = ""
        }
        return Unreachable(message: "cannot reach the replica-node serving \(dataDirectory.path): permission denied on its control socket \(path)\(owner)")
    }

    /// The process id of the node serving this data directory, as this process's namespace
    /// numbers it (`SO_PEERCRED` of a plain connection to its control socket; the pid the node
    /// wrote in its lock is its own namespace's, wrong from a host or another container). Nil
    /// if nobody listens or the node's process cannot be named from here.
    var nodePID: Int32? {
        let fd = Self.connected(ControlEndpoint.socketPath(in: dataDirectory))
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // `struct ucred` (pid, uid, gid: three 32-bit fields), which Glibc's module leaves out.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else { return nil }
        return credentials.pid
    }

    /// A plain `connect()` to the Unix socket at `path`: its descriptor, or -1 (errno says why).
    private static func connected(_ path: String) -> Int32 {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            close(fd)
            errno = error
            return -1
        }
        return fd
    }

    /// A plain `connect()` to the Unix socket: refused means nobody is listening.
    static func probe(_ path: String) -> Probe {
        let fd = connected(path)
        if fd >= 0 {
            close(fd)
            return .listening
        }
        switch errno {
        // EAGAIN: its listen backlog is full, so it is listening (and busy). No socket of our
        // own, or a path too long to try: nothing says it is not.
        case EAGAIN, EMFILE, ENFILE, ENOBUFS, ENOMEM, ENAMETOOLONG: return .listening
        case EACCES, EPERM: return .denied
        default: return .notListening
        }
    }

    /// A reply of another kind than the request asks for (a node of another version).
    struct UnexpectedReply: Error, CustomStringConvertible {
        var reply: ControlReply
        /// It answered a change, which the node may have applied before it answered so
        /// (the message did not say).
        var toChange = false
        var description: String {
            let message = "the node sent an unexpected reply: \(reply)"
            return toChange ? message + "; the change may or may not have been applied: \(ControlClient.readBack)" : message
        }
    }

    /// A request larger than the node reads (`ControlEndpoint.maxRequestBytes`): sent, it
    /// would get no reply, only a timeout.
    struct RequestTooLarge: Error, CustomStringConvertible {
        var size: Int
        var description: String {
            "the request is \(size) bytes, over the control socket's limit of \(ControlEndpoint.maxRequestBytes) bytes; it was not sent"
        }
    }

    func send(_ request: ControlRequest) throws {
        let body = Array(try JSONEncoder().encode(request))
        guard body.count <= ControlEndpoint.maxRequestBytes else { throw RequestTooLarge(size: body.count) }
        try socket.send([body], wait: true)
    }

    /// The node closed the connection before answering: it stopped (a graceful stop answers
    /// every request it has read, so this one had not been read, unless the node was killed).
    struct NodeStopped: Error, CustomStringConvertible {
        var dataDirectory: URL
        /// Set when the request was a change (see `description`).
        var unansweredChange = false
        /// The node still listened once the connection closed: it did not stop; the reply was
        /// more than this client takes (`keys` of a store of 70,000 long keys was
        /// reported as a node that stopped, while it ran on, healthy).
        var nodeStillListens = false
        var description: String {
            if nodeStillListens {
                return "the connection to the replica-node serving \(dataDirectory.path) closed before its reply arrived, while the "
                    + "node still runs: most likely the reply was over this client's limit of \(ControlClient.maxReplyBytes >> 20) MiB "
                    + "(for `keys` of a node before 0.28.0, list a part at a time with --prefix)"
            }
            let stopped = "the replica-node serving \(dataDirectory.path) stopped before answering: the node is shutting down (or was killed)"
            guard unansweredChange else { return stopped }
            // Not "not applied": a second signal, or a drain past its limit, ends a graceful stop
            // with requests read and unanswered.
            return stopped + "; the change may or may not have been applied: \(ControlClient.readBack)"
        }
    }

    /// A reply this client cannot decode: most often the node runs another version of
    /// replica-node, whose reply has fields this one does not know or lacks ones it needs.
    struct UnreadableReply: Error, CustomStringConvertible {
        var dataDirectory: URL
        var reason: String
        var description: String {
            "cannot read the reply of the node serving \(dataDirectory.path) (\(reason)); it may run another version of "
                + "replica-node than this one (\(ReplicaNodeCommand.configuration.version)): use a client of the node's version"
        }

        /// What did not decode, by its path in the reply: "no field status.peers.0.trusted".
        static func reason(_ error: any Error) -> String {
            func path(_ keys: [any CodingKey]) -> String {
                keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            }
            switch error as? DecodingError {
            case .keyNotFound(let key, let context)?: return "no field " + path(context.codingPath + [key])
            case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
                return "field \(path(context.codingPath)) is not what this version expects"
            case .dataCorrupted(let context)?:
                return context.codingPath.isEmpty ? context.debugDescription : "field \(path(context.codingPath)): \(context.debugDescription)"
            default: return "\(error)"
            }
        }
    }

    /// How often a wait for a reply looks at the connection's events.
    static let eventCheckInterval: Duration = .milliseconds(100)

    /// Waits for the next reply; nil after `timeout` with none (nil timeout: wait forever).
    /// A `.failure` reply is thrown as its `ControlFailure`; a connection the node closed
    /// before replying, as `NodeStopped` (unless `endsWhenDisconnected` is off).
    func receive(timeout: Duration?) throws -> ControlReply? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let slice = deadline.map { min(max(.zero, $0 - .now), Self.eventCheckInterval) } ?? Self.eventCheckInterval
            if try socket.waitUntilReadable(timeout: endsWhenDisconnected ? slice : timeout) { break }
            if endsWhenDisconnected && disconnected() {
                // A reply sent before the connection closed was read before the close.
                guard try socket.waitUntilReadable(timeout: .zero) else {
                    throw NodeStopped(dataDirectory: dataDirectory, nodeStillListens: nodeIsListening)
                }
                break
            }
            if !endsWhenDisconnected { return nil }
            if let deadline, ContinuousClock.now >= deadline { return nil }
        }
        guard let message = try socket.receive(), let body = message.frames.first else { return nil }
        let reply: ControlReply
        do {
            reply = try JSONDecoder().decode(ControlReply.self, from: Data(body))
        } catch {
            throw UnreadableReply(dataDirectory: dataDirectory, reason: UnreadableReply.reason(error))
        }
        if case .failure(let failure) = reply { throw failure }
        return reply
    }

    /// Whether the connection has been closed since it was made (events read so far).
    private func disconnected() -> Bool {
        closedSeen.value.withLock { closed in
            while let event = try? monitor.receiveMonitorEvent() {
                if event == .disconnected { closed = true }
            }
            return closed
        }
    }

    /// Sends one request and returns its reply.
    /// A change left unanswered (the node went quiet or stopped after it was sent) says that it
    /// may have been applied: a script that repeats it blindly could apply it twice.
    func call(_ request: ControlRequest) throws -> ControlReply {
        try send(request)
        do {
            guard let reply = try receive(timeout: timeout) else { throw notAnswering }
            if request.isChange { Output.changeWasApplied() }
            return reply
        } catch var unanswered as Unreachable where request.isChange {
            unanswered.unansweredChange = true
            throw unanswered
        } catch var stopped as NodeStopped where request.isChange {
            stopped.unansweredChange = true
            throw stopped
        }
    }

    /// Sends one request and returns the answer it expects (`\.entry`, `\.status`, ...).
    func call<Answer>(_ request: ControlRequest, expecting answer: KeyPath<ControlReply, Answer?>) throws -> Answer {
        let reply = try call(request)
        guard let value = reply[keyPath: answer] else { throw UnexpectedReply(reply: reply, toChange: request.isChange) }
        return value
    }

    /// Asks for a listing page by page (`request(after)`, after the last key of the page
    /// before) and hands each page's items to `body` as it comes. A node before 0.28.0 knows no
    /// page request: `OlderNode` is thrown before anything is handed on.
    func forEachPage<Item>(
        _ request: (_ after: String?) -> ControlRequest, expecting answer: KeyPath<ControlReply, ListedPage<Item>?>, _ body: ([Item]) throws -> Void
    ) throws {
        var after: String?
        repeat {
            let page: ListedPage<Item>
            do {
                page = try call(request(after), expecting: answer)
            } catch let failure as ControlFailure where after == nil && failure.isMalformedRequest {
                throw OlderNode()
            }
            // Each page starts after the one before: a node that named a key not past it would
            // have this listing go on for ever (such a page is not handed on).
            if let next = page.next, let previous = after, !previous.utf8.lexicographicallyPrecedes(next.utf8) {
                throw UnexpectedReply(reply: .failure(ControlFailure(.internalError, "a listing page did not move past \(previous)")))
            }
            try body(page.items)
            after = page.next
        } while after != nil
    }

    /// The node answered a request of this version as malformed: it runs an older one.
    struct OlderNode: Error {}

    var notAnswering: Unreachable {
        Unreachable(message: "the replica-node serving \(dataDirectory.path) did not answer within \(timeout)")
    }
}
