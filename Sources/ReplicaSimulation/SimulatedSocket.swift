import Foundation
@_spi(Simulation) import ReplicaCore

/// A socket of a `SimulatedNetwork`, with the semantics a replica relies on from libzmq's: an
/// XPUB fans published frames out to the subscribers whose prefixes match and reports their
/// subscriptions; a SUB sends its subscriptions and receives; a ROUTER names each client by an
/// identity frame; a DEALER talks to the one server it dialled; a monitor (a PAIR) receives the
/// connection events of the socket it watches.
final class SimulatedSocket: MessageSocket, @unchecked Sendable {
    let kind: ZMQSocket.Kind
    let host: String
    unowned let network: SimulatedNetwork
    private(set) var isOpen = true
    var sendHighWaterMark = 1000
    var receiveHighWaterMark = 1000
    private var routerMandatory = false

    /// Connections: a server's accepted ones, or a client's (at most one live, to what it dialled).
    private(set) var connections: [SimulatedConnection] = []
    private var dialled: [String: SimulatedConnection] = [:]
    /// What a SUB asked for (sent to each server it connects to).
    private var subscriptions: [[UInt8]] = []
    private var inbox: [(message: SimulatedMessage, connection: SimulatedConnection?)] = []
    private var subscriptionChanges: [(change: ZMQSocket.SubscriptionChange, descriptor: Int32)] = []
    private var notices: [ZMQSocket.MonitorNotice] = []
    /// The monitor watching this socket, and the events it wants.
    private var monitorSocket: SimulatedSocket?
    private var monitored: Set<MonitorKind> = []
    enum MonitorKind: Hashable { case connected, accepted, handshakeSucceeded, disconnected, handshakeFailed, other }

    init(kind: ZMQSocket.Kind, host: String, network: SimulatedNetwork) {
        self.kind = kind
        self.host = host
        self.network = network
        network.opened(self)
    }

    var hasInput: Bool { !inbox.isEmpty || !subscriptionChanges.isEmpty || !notices.isEmpty }
    var hasRoom: Bool { inbox.count < receiveHighWaterMark }

    // MARK: MessageSocket

    func bind(_ endpoint: String) throws(ZMQError) {
        try network.bind(self, at: SimulatedNetwork.target(of: endpoint))
    }

    func connect(_ endpoint: String) throws(ZMQError) {
        let target = SimulatedNetwork.target(of: endpoint)
        let connection = network.connect(self, to: target)
        dialled[target] = connection
        connections.append(connection)
    }

    func redial(_ endpoint: String) throws(ZMQError) {
        let target = SimulatedNetwork.target(of: endpoint)
        if let old = dialled.removeValue(forKey: target) { end(old) }
        try connect(endpoint)
    }

    func setConnectTimeout(_ timeout: Duration) throws(ZMQError) {}

    func close() {
        guard isOpen else { return }
        isOpen = false
        for connection in connections { network.close(connection, by: self) }
        connections = []
        dialled = [:]
        inbox = []
        network.unbind(self)
        network.closed(self)
        monitorSocket = nil
    }

    /// A re-dial drops the old connection and what it queued (its owner knows: no event).
    private func end(_ connection: SimulatedConnection) {
        network.close(connection, by: self)
        connections.removeAll { $0 === connection }
        inbox.removeAll { $0.connection === connection }
    }

    func send(_ frames: [[UInt8]], wait: Bool) throws(ZMQError) -> Bool {
        guard isOpen else { throw ZMQError(code: ENOTSOCK, operation: "send") }
        switch kind {
        case .xpub, .pub:
            guard let frame = frames.first else { return true }
            network.published?(host, frame)
            for connection in connections
            where connection.state == .established && connection.subscriptions.contains(where: { frame.starts(with: $0) }) {
                _ = network.send(SimulatedMessage(frames: frames), on: connection, toServer: false)
            }
            return true
        case .router:
            guard let identity = frames.first, let connection = connections.first(where: { $0.identity == identity && $0.state == .established }) else {
                if routerMandatory { throw ZMQError(code: EHOSTUNREACH, operation: "send") }
                return true
            }
            return network.send(SimulatedMessage(frames: Array(frames.dropFirst())), on: connection, toServer: false)
        case .dealer:
            guard let connection = connections.last(where: { $0.state == .connecting || $0.state == .established }) else { return false }
            return network.send(SimulatedMessage(frames: frames), on: connection, toServer: true)
        default:
            return false
        }
    }

    func send(frame: [UInt8], wait: Bool) throws(ZMQError) -> Bool {
        try send([frame], wait: wait)
    }

    func receive(wait: Bool, maxFrames: Int, identifyingSender: Bool) throws(ZMQError) -> ReceivedMessage? {
        guard isOpen else { throw ZMQError(code: ENOTSOCK, operation: "receive") }
        if kind == .pair {
            // A monitor: its notices are read with `receiveMonitorNotice`.
            return nil
        }
        guard !inbox.isEmpty else { return nil }
        let (message, connection) = inbox.removeFirst()
        network.roomMade(in: self)
        var frames = message.frames
        if kind == .router, let connection { frames.insert(connection.identity, at: 0) }
        let truncated = frames.count > maxFrames
        let sender = identifyingSender ? connection.map { MessageSender(descriptor: $0.serverDescriptor, userID: nil) } : nil
        return ReceivedMessage(frames: Array(frames.prefix(maxFrames)), truncated: truncated, sender: sender)
    }

    func subscribe(_ prefix: [UInt8]) throws(ZMQError) {
        subscriptions.append(prefix)
        for connection in connections { _ = network.send(SimulatedMessage(frames: [[1] + prefix]), on: connection, toServer: true) }
    }

    func unsubscribe(_ prefix: [UInt8]) throws(ZMQError) {
        if let index = subscriptions.firstIndex(of: prefix) { subscriptions.remove(at: index) }
        for connection in connections { _ = network.send(SimulatedMessage(frames: [[0] + prefix]), on: connection, toServer: true) }
    }

    func receiveSubscription() throws(ZMQError) -> (change: ZMQSocket.SubscriptionChange, sender: MessageSender?)? {
        guard !subscriptionChanges.isEmpty else { return nil }
        let (change, descriptor) = subscriptionChanges.removeFirst()
        return (change, MessageSender(descriptor: descriptor, userID: nil))
    }

    func monitorConnections(_ events: [ZMQSocket.MonitorEvent]) throws(ZMQError) -> any MessageSocket {
        let socket = SimulatedSocket(kind: .pair, host: host, network: network)
        monitorSocket = socket
        monitored = Set(events.map { event -> MonitorKind in
            switch event {
            case .connected: .connected
            case .accepted: .accepted
            case .handshakeSucceeded: .handshakeSucceeded
            case .disconnected: .disconnected
            case .handshakeFailed: .handshakeFailed
            case .other: .other
            }
        })
        return socket
    }

    func receiveMonitorNotice() throws(ZMQError) -> ZMQSocket.MonitorNotice? {
        guard !notices.isEmpty else { return nil }
        return notices.removeFirst()
    }

    func setHighWaterMarks(send: Int32, receive: Int32) throws(ZMQError) {
        sendHighWaterMark = Int(send)
        receiveHighWaterMark = Int(receive)
    }

    func setRouterMandatory(_ on: Bool) throws(ZMQError) { routerMandatory = on }

    // MARK: The network's side

    /// A server accepted `connection`.
    func accepted(_ connection: SimulatedConnection) {
        connections.append(connection)
        notify(.accepted, value: connection.serverDescriptor)
        notify(.handshakeSucceeded, value: connection.serverDescriptor)
    }

    /// A client's connection came up: its subscriptions go out first.
    func connected(_ connection: SimulatedConnection) {
        notify(.connected, value: connection.clientDescriptor)
        notify(.handshakeSucceeded, value: connection.clientDescriptor)
        if kind == .sub {
            for prefix in subscriptions { _ = network.send(SimulatedMessage(frames: [[1] + prefix]), on: connection, toServer: true) }
        }
    }

    func receive(_ message: SimulatedMessage, from connection: SimulatedConnection) {
        if kind == .xpub || kind == .pub {
            // A subscription message: applied to the connection, and reported.
            guard let frame = message.frames.first, let first = frame.first else { return }
            let prefix = Array(frame.dropFirst())
            if first == 1 {
                connection.subscriptions.append(prefix)
                subscriptionChanges.append((.subscribed(prefix), connection.serverDescriptor))
            } else if let index = connection.subscriptions.firstIndex(of: prefix) {
                connection.subscriptions.remove(at: index)
                subscriptionChanges.append((.unsubscribed(prefix), connection.serverDescriptor))
            }
            return
        }
        inbox.append((message, connection))
    }

    /// One of this socket's connections ended at the other end.
    func disconnected(descriptor: Int32) {
        guard let index = connections.firstIndex(where: { $0.serverDescriptor == descriptor || $0.clientDescriptor == descriptor }) else { return }
        let connection = connections.remove(at: index)
        dialled = dialled.filter { $0.value !== connection }
        notify(.disconnected, value: descriptor)
    }

    private func notify(_ kind: MonitorKind, value: Int32) {
        guard monitored.contains(kind), let monitorSocket, monitorSocket.isOpen else { return }
        let event: ZMQSocket.MonitorEvent = switch kind {
        case .connected: .connected
        case .accepted: .accepted
        case .handshakeSucceeded: .handshakeSucceeded
        case .disconnected: .disconnected
        case .handshakeFailed: .handshakeFailed
        case .other: .other(0)
        }
        monitorSocket.notices.append(ZMQSocket.MonitorNotice(event: event, value: value, failure: nil))
    }
}
