import Foundation
@_spi(Simulation) import ReplicaCore

/// Links between simulated hosts: how a message travels from one host to another.
public struct LinkCondition: Equatable, Sendable {
    /// Nothing gets through in this direction (a partition, one way or both). What a connection
    /// was carrying waits, as TCP's retransmissions would, and goes through once it heals.
    public var blocked = false
    /// One-way delay, and a random extra of up to `jitter` per message.
    public var delay: Duration = .microseconds(200)
    public var jitter: Duration = .zero
    /// Probability that a published message is lost (what a full pipe drops), or delivered
    /// twice; a request connection (DEALER/ROUTER, over TCP) ends instead, a tenth as often.
    public var loss = 0.0
    public var duplication = 0.0

    public init(blocked: Bool = false, delay: Duration = .microseconds(200), jitter: Duration = .zero, loss: Double = 0, duplication: Double = 0) {
        self.blocked = blocked
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.duplication = duplication
    }
}

/// A network of simulated hosts in one process, for `SimulatedSocket`s: ZeroMQ's XPUB/SUB and
/// DEALER/ROUTER semantics over links whose delay, loss, duplication and partitions the
/// simulation sets. Not thread-safe: one simulation drives it from one thread.
///
/// What it models, and what not (docs/simulation.md): connections keep their messages in order
/// (TCP does); a connect needs both directions open; a blocked direction holds what a connection
/// sends until it heals; a closed or crashed socket's connections end at once for their peers;
/// high-water marks drop (PUB) or refuse (DEALER, ROUTER) as libzmq's do. CURVE is not modelled.
public final class SimulatedNetwork: @unchecked Sendable {
    public let time: SimulatedTime
    var random: SimulationRandom
    /// Conditions per direction (from host, to host); `standard` for pairs not listed.
    public var standard = LinkCondition()
    private var conditions: [HostPair: LinkCondition] = [:]
    struct HostPair: Hashable {
        var from: String
        var to: String
    }

    private var bound: [String: SimulatedSocket] = [:]
    /// Every open socket, by host: for readiness, and to end them all when a host crashes.
    private var sockets: [String: [SimulatedSocket]] = [:]
    private var deliveries = DeliveryQueue()
    private var nextDescriptor: Int32 = 100
    private var nextSequence: UInt64 = 0
    /// Everything delivered, hashed in order: equal for equal seeds.
    public private(set) var trace = TraceHash()
    public private(set) var messagesDelivered = 0
    /// Sees every frame a host publishes (an XPUB's send), before it fans out: a simulation
    /// checks what the frames claim against what the nodes hold.
    public var published: ((_ host: String, _ frame: [UInt8]) -> Void)?
    public private(set) var messagesLost = 0

    public init(time: SimulatedTime, seed: UInt64) {
        self.time = time
        random = SimulationRandom(seed: seed)
    }

    public func condition(from: String, to: String) -> LinkCondition {
        conditions[HostPair(from: from, to: to)] ?? standard
    }

    public func setCondition(_ condition: LinkCondition, from: String, to: String) {
        conditions[HostPair(from: from, to: to)] = condition
        if !condition.blocked { releaseHeld(from: from, to: to) }
    }

    /// Every link back to the standard condition.
    public func healAll() {
        let pairs = conditions.keys
        conditions = [:]
        for pair in pairs { releaseHeld(from: pair.from, to: pair.to) }
    }

    /// A socket factory for the host `host` (the host part of its listen address).
    public func host(_ host: String) -> SimulatedHost {
        SimulatedHost(network: self, name: host)
    }

    // MARK: Time

    /// When the next delivery is due (nil: nothing in flight).
    public var nextDue: MonotonicInstant? { deliveries.first?.at }

    /// Carries out every delivery due by now.
    public func deliverDue() {
        while let next = deliveries.first, next.at <= time.now {
            deliveries.removeFirst()
            perform(next.delivery)
        }
    }

    /// Whether any socket of `host` has input waiting.
    public func hasInput(host: String) -> Bool {
        sockets[host]?.contains { $0.hasInput } ?? false
    }

    /// The process on `host` is gone: its sockets close at once, and their peers see their
    /// connections end (a killed process's connections are reset).
    public func crash(host: String) {
        for socket in sockets[host] ?? [] { socket.close() }
        sockets[host] = nil
    }

    // MARK: Sockets (called by `SimulatedSocket`)

    func opened(_ socket: SimulatedSocket) {
        sockets[socket.host, default: []].append(socket)
    }

    func closed(_ socket: SimulatedSocket) {
        sockets[socket.host]?.removeAll { $0 === socket }
    }

    func descriptor() -> Int32 {
        nextDescriptor += 1
        return nextDescriptor
    }

    func bind(_ socket: SimulatedSocket, at address: String) throws(ZMQError) {
        guard bound[address] == nil else { throw ZMQError(code: EADDRINUSE, operation: "bind \(address)") }
        bound[address] = socket
    }

    func unbind(_ socket: SimulatedSocket) {
        bound = bound.filter { $0.value !== socket }
    }

    /// A connect: established after a round trip if both directions are open and a socket is
    /// bound there; otherwise it fails quietly (the owner re-dials, as with libzmq's automatic
    /// reconnection off).
    func connect(_ client: SimulatedSocket, to address: String) -> SimulatedConnection {
        let connection = SimulatedConnection(client: client, clientDescriptor: descriptor(), serverDescriptor: descriptor(), address: address)
        let server = bound[address]
        let host = server?.host ?? Self.host(of: address)
        let there = condition(from: client.host, to: host)
        let back = condition(from: host, to: client.host)
        schedule(.connect(connection), after: there.delay + back.delay)
        return connection
    }

    static func host(of address: String) -> String {
        let bare = address.split(separator: ";").last.map(String.init) ?? address
        let withoutScheme = bare.hasPrefix("tcp://") ? String(bare.dropFirst(6)) : bare
        guard let colon = withoutScheme.lastIndex(of: ":") else { return withoutScheme }
        return String(withoutScheme[..<colon])
    }

    static func target(of address: String) -> String {
        let bare = address.split(separator: ";").last.map(String.init) ?? address
        return bare.hasPrefix("tcp://") ? bare : "tcp://" + bare
    }

    /// Sends `message` on `connection` towards its server (`toServer`) or its client: false when
    /// the pipe is full (the caller drops it, or says it would block).
    func send(_ message: SimulatedMessage, on connection: SimulatedConnection, toServer: Bool) -> Bool {
        guard connection.state != .closed else { return false }
        let sender = toServer ? connection.client : connection.server
        let receiver = toServer ? connection.server : connection.client
        let capacity = (sender?.sendHighWaterMark ?? 1000) + (receiver?.receiveHighWaterMark ?? 1000)
        guard connection.pending(toServer: toServer) < capacity else { return false }
        let from = sender?.host ?? ""
        let to = receiver?.host ?? Self.host(of: connection.address)
        let link = condition(from: from, to: to)
        // PUB/SUB loses messages (a full pipe, a reconnect) and a member can get one twice (by
        // itself and by a relay). A TCP connection loses nothing and duplicates nothing while it
        // lives: on a request connection, a loss is the connection's end (a tenth as often).
        let published = !toServer && sender?.kind == .xpub
        if link.loss > 0, random.chance(published ? link.loss : link.loss / 10) {
            messagesLost += 1
            if !published { breakConnection(connection) }
            return true
        }
        let copies = published && link.duplication > 0 && random.chance(link.duplication) ? 2 : 1
        for _ in 0..<copies {
            connection.enqueue(message, toServer: toServer)
            if link.blocked || connection.state == .connecting { continue }
            let jitter = link.jitter > .zero ? link.jitter * random.fraction() : .zero
            let at = max(time.now + link.delay + jitter, connection.lastDue(toServer: toServer))
            connection.setLastDue(at, toServer: toServer)
            schedule(.message(connection, toServer: toServer), at: at)
        }
        return true
    }

    /// The connection ends under both sockets (a reset): each sees it closed.
    private func breakConnection(_ connection: SimulatedConnection) {
        guard connection.state != .closed else { return }
        connection.state = .closed
        for end in [connection.client, connection.server] {
            guard let end, end.isOpen else { continue }
            let descriptor = end === connection.server ? connection.serverDescriptor : connection.clientDescriptor
            schedule(.disconnected(end, descriptor: descriptor), after: .zero)
        }
    }

    func close(_ connection: SimulatedConnection, by closer: SimulatedSocket) {
        guard connection.state != .closed else { return }
        connection.state = .closed
        for end in [connection.client, connection.server] {
            guard let end, end !== closer, end.isOpen else { continue }
            let descriptor = end === connection.server ? connection.serverDescriptor : connection.clientDescriptor
            schedule(.disconnected(end, descriptor: descriptor), after: condition(from: closer.host, to: end.host).delay)
        }
    }

    // MARK: Deliveries

    enum Delivery {
        case connect(SimulatedConnection)
        case message(SimulatedConnection, toServer: Bool)
        case disconnected(SimulatedSocket, descriptor: Int32)
    }

    private func schedule(_ delivery: Delivery, after delay: Duration) {
        schedule(delivery, at: time.now + delay)
    }

    private func schedule(_ delivery: Delivery, at: MonotonicInstant) {
        nextSequence += 1
        deliveries.insert(at: at, sequence: nextSequence, delivery)
    }

    private func perform(_ delivery: Delivery) {
        switch delivery {
        case .connect(let connection):
            guard connection.state == .connecting, let client = connection.client, client.isOpen else { return }
            guard let server = bound[connection.address], server.isOpen,
                  !condition(from: client.host, to: server.host).blocked, !condition(from: server.host, to: client.host).blocked
            else {
                connection.state = .failed
                return
            }
            connection.state = .established
            connection.server = server
            server.accepted(connection)
            client.connected(connection)
            trace.combine("connect", client.host, server.host)
            // What was queued before the connection was up goes now, in order.
            for toServer in [true, false] { release(connection, toServer: toServer) }
        case .message(let connection, let toServer):
            pull(connection, toServer: toServer)
        case .disconnected(let socket, let descriptor):
            socket.disconnected(descriptor: descriptor)
        }
    }

    /// Moves what is due on `connection` into the receiving socket, as far as it has room.
    func pull(_ connection: SimulatedConnection, toServer: Bool) {
        guard connection.state == .established, let receiver = toServer ? connection.server : connection.client, receiver.isOpen else { return }
        while let head = connection.head(toServer: toServer), head.due.map({ $0 <= time.now }) ?? false,
              receiver.hasRoom {
            connection.dropHead(toServer: toServer)
            messagesDelivered += 1
            trace.combine(head.message.frames)
            receiver.receive(head.message, from: connection)
        }
    }

    /// A socket read its inbox: what waited for room comes in.
    func roomMade(in socket: SimulatedSocket) {
        for connection in socket.connections where connection.state == .established {
            pull(connection, toServer: connection.server === socket)
        }
    }

    /// Held messages of connections from `from` to `to` go out now that the direction is open.
    private func releaseHeld(from: String, to: String) {
        for socket in bound.values {
            for connection in socket.connections where connection.state == .established {
                guard let client = connection.client else { continue }
                if client.host == from && socket.host == to { release(connection, toServer: true) }
                if socket.host == from && client.host == to { release(connection, toServer: false) }
            }
        }
    }

    private func release(_ connection: SimulatedConnection, toServer: Bool) {
        guard let from = (toServer ? connection.client : connection.server)?.host,
              let to = (toServer ? connection.server : connection.client)?.host else { return }
        let link = condition(from: from, to: to)
        guard !link.blocked else { return }
        let at = max(time.now + link.delay, connection.lastDue(toServer: toServer))
        guard connection.scheduleUndue(at: at, toServer: toServer) else { return }
        connection.setLastDue(at, toServer: toServer)
        schedule(.message(connection, toServer: toServer), at: at)
    }
}

/// The sockets of one simulated host.
public struct SimulatedHost: SocketFactory {
    public let network: SimulatedNetwork
    public let name: String

    public func makeSocket(_ kind: ZMQSocket.Kind) throws(ZMQError) -> any MessageSocket {
        SimulatedSocket(kind: kind, host: name, network: network)
    }
}

/// One message in flight, as its frames.
struct SimulatedMessage {
    var frames: [[UInt8]]
}

final class SimulatedConnection {
    enum State { case connecting, established, failed, closed }
    weak var client: SimulatedSocket?
    weak var server: SimulatedSocket?
    let clientDescriptor: Int32
    let serverDescriptor: Int32
    let address: String
    var state: State = .connecting
    /// What the server knows of the client's subscriptions (XPUB), as prefixes.
    var subscriptions: [[UInt8]] = []
    /// Identity the server's ROUTER gives the client.
    var identity: [UInt8] { withUnsafeBytes(of: serverDescriptor.bigEndian) { Array($0) } }

    struct Queued {
        var message: SimulatedMessage
        /// When it may arrive (nil: not sent on yet, held by a partition or a connect under way).
        var due: MonotonicInstant?
    }
    private var toServer: [Queued] = []
    private var toClient: [Queued] = []
    private var lastDueToServer: MonotonicInstant?
    private var lastDueToClient: MonotonicInstant?

    init(client: SimulatedSocket, clientDescriptor: Int32, serverDescriptor: Int32, address: String) {
        self.client = client
        self.clientDescriptor = clientDescriptor
        self.serverDescriptor = serverDescriptor
        self.address = address
    }

    func pending(toServer: Bool) -> Int { toServer ? self.toServer.count : toClient.count }

    func enqueue(_ message: SimulatedMessage, toServer: Bool) {
        if toServer { self.toServer.append(Queued(message: message)) } else { toClient.append(Queued(message: message)) }
    }

    func lastDue(toServer: Bool) -> MonotonicInstant {
        (toServer ? lastDueToServer : lastDueToClient) ?? .now - .seconds(1_000_000)
    }

    func setLastDue(_ at: MonotonicInstant, toServer: Bool) {
        if toServer { lastDueToServer = at } else { lastDueToClient = at }
        // The message just queued (the last one) is due then.
        if toServer, !self.toServer.isEmpty, self.toServer[self.toServer.count - 1].due == nil { self.toServer[self.toServer.count - 1].due = at }
        if !toServer, !toClient.isEmpty, toClient[toClient.count - 1].due == nil { toClient[toClient.count - 1].due = at }
    }

    /// Gives every message not yet sent on a due time; false if there was none.
    func scheduleUndue(at: MonotonicInstant, toServer: Bool) -> Bool {
        var any = false
        if toServer {
            for index in self.toServer.indices where self.toServer[index].due == nil { self.toServer[index].due = at; any = true }
        } else {
            for index in toClient.indices where toClient[index].due == nil { toClient[index].due = at; any = true }
        }
        return any
    }

    func head(toServer: Bool) -> Queued? { toServer ? self.toServer.first : toClient.first }

    func dropHead(toServer: Bool) {
        if toServer { self.toServer.removeFirst() } else { toClient.removeFirst() }
    }
}

/// Deliveries by time, then by the order they were scheduled (a stable order for equal
/// times): a binary heap.
struct DeliveryQueue {
    typealias Item = (at: MonotonicInstant, sequence: UInt64, delivery: SimulatedNetwork.Delivery)
    private var items: [Item] = []

    var first: Item? { items.first }

    private static func before(_ a: Item, _ b: Item) -> Bool { (a.at, a.sequence) < (b.at, b.sequence) }

    mutating func insert(at: MonotonicInstant, sequence: UInt64, _ delivery: SimulatedNetwork.Delivery) {
        items.append((at, sequence, delivery))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let (left, right) = (2 * parent + 1, 2 * parent + 2)
            var smallest = parent
            if left < items.count, Self.before(items[left], items[smallest]) { smallest = left }
            if right < items.count, Self.before(items[right], items[smallest]) { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
