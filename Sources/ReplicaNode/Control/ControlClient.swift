import Foundation
import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// Talks to the node serving a data directory, for the client commands.
struct ControlClient {
    /// Why a client command could not reach its node.
    struct Unreachable: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    let dataDirectory: URL
    let context: ZMQContext
    let socket: ZMQSocket
    var timeout: Duration = .seconds(5)

    /// Connects, failing at once (not after a timeout) when no node serves the directory.
    init(dataDirectory: URL) throws {
        self.dataDirectory = dataDirectory
        let path = ControlEndpoint.socketPath(in: dataDirectory)
        guard FileManager.default.fileExists(atPath: path) else {
            throw Unreachable(message: "no replica-node is serving \(dataDirectory.path) (no control socket at \(path))")
        }
        guard Self.isListening(path) else {
            throw Unreachable(message: "no replica-node is serving \(dataDirectory.path) (stale control socket; the node is not running)")
        }
        context = try ZMQContext()
        socket = try context.socket(.dealer)
        try socket.setMaxMessageSize(64 << 20)
        try socket.connect(ControlEndpoint.address(in: dataDirectory))
    }

    /// Whether the node still listens on its control socket.
    var nodeIsListening: Bool { Self.isListening(ControlEndpoint.socketPath(in: dataDirectory)) }

    /// A plain `connect()` to the Unix socket: refused means nobody is listening.
    private static func isListening(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return true }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    /// A reply of another kind than the request asks for (a node of another version).
    struct UnexpectedReply: Error, CustomStringConvertible {
        var reply: ControlReply
        var description: String { "the node sent an unexpected reply: \(reply)" }
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

    /// Waits for the next reply; nil after `timeout` with none (nil timeout: wait forever).
    /// A `.failure` reply is thrown as its `ControlFailure`.
    func receive(timeout: Duration?) throws -> ControlReply? {
        guard try socket.waitUntilReadable(timeout: timeout),
              let message = try socket.receive(), let body = message.frames.first
        else { return nil }
        let reply = try JSONDecoder().decode(ControlReply.self, from: Data(body))
        if case .failure(let failure) = reply { throw failure }
        return reply
    }

    /// Sends one request and returns its reply.
    func call(_ request: ControlRequest) throws -> ControlReply {
        try send(request)
        guard let reply = try receive(timeout: timeout) else { throw notAnswering }
        return reply
    }

    /// Sends one request and returns the answer it expects (`\.entry`, `\.status`, ...).
    func call<Answer>(_ request: ControlRequest, expecting answer: KeyPath<ControlReply, Answer?>) throws -> Answer {
        let reply = try call(request)
        guard let value = reply[keyPath: answer] else { throw UnexpectedReply(reply: reply) }
        return value
    }

    var notAnswering: Unreachable {
        Unreachable(message: "the replica-node serving \(dataDirectory.path) did not answer within \(timeout)")
    }
}
