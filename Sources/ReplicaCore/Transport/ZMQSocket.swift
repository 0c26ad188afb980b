import CZMQ
import Synchronization

/// A libzmq socket with a safe Swift surface.
///
/// libzmq sockets are not thread-safe: a socket belongs to one thread at a time. In Replica each
/// socket is owned by one actor whose executor is a ``PollLoop`` thread, which is why the type can
/// be `@unchecked Sendable` (it is handed to its owner once, then used only there).
/// `close()` is idempotent and also runs on deinit; LINGER is 0 so closing never blocks.
public final class ZMQSocket: @unchecked Sendable {
    public enum Kind: Sendable {
        case pub, sub, router, dealer, rep
        /// A PUB that also reports its subscribers' subscriptions (see ``receiveSubscription()``).
        case xpub
        /// Only for reading socket-monitor events (see ``monitor(_:)``).
        case pair

        var rawValue: Int32 {
            switch self {
            case .pub: ZMQ_PUB
            case .sub: ZMQ_SUB
            case .router: ZMQ_ROUTER
            case .dealer: ZMQ_DEALER
            case .rep: ZMQ_REP
            case .xpub: ZMQ_XPUB
            case .pair: ZMQ_PAIR
            }
        }
    }

    public let kind: Kind
    private let context: ZMQContext  // keeps the context alive while this socket is open
    private(set) var handle: UnsafeMutableRawPointer?
    /// Numbers the monitors' inproc endpoints.
    private static let monitorNumbers = Atomic<UInt64>(0)

    /// A monitor was started on this socket (`monitor(_:)`): stopped before the socket closes.
    private var isMonitored = false
    /// For a monitor's PAIR: the socket it reports on, whose monitor it stops when it closes
    /// first. Both are used on one thread (the socket's owner), as libzmq requires.
    private weak var monitoredSocket: ZMQSocket?

    init(context: ZMQContext, kind: Kind) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, kind.rawValue) else { throw .last("zmq_socket") }
        self.context = context
        self.kind = kind
        self.handle = handle
        try setOption(ZMQ_LINGER, 0)
    }

    deinit { close() }

    /// Closes the socket; later calls do nothing.
    ///
    /// A monitored socket stops its monitor first, and so does a monitor's reading end that
    /// closes before the socket it reports on, as libzmq's maintainers advise (zeromq/libzmq#3575,
    /// #2083). libzmq reports events from its I/O thread with blocking sends: once the reading
    /// end is closed, libzmq's end of the monitor can no longer write (its pipe waits for a
    /// delimiter it never reads), and the next event, such as the `disconnected` of a connection
    /// that ends while the socket closes, blocks the I/O thread for good, and with it every
    /// socket of the context: the node goes deaf. Stopping the monitor, on the owning thread,
    /// closes libzmq's end of it first. (Seen: `SocketMonitorTests`, and a node that stopped
    /// hearing anyone after a member left.)
    public func close() {
        guard let handle else { return }
        // While the handle is still set: stopping the monitor needs it.
        stopMonitoring()
        monitoredSocket?.stopMonitoring()  // this is a monitor's reading end, closing first
        self.handle = nil
        zmq_close(handle)
    }

    /// Stops the monitor started on this socket, if any (a no-op once closed).
    private func stopMonitoring() {
        guard isMonitored else { return }
        isMonitored = false
        if let handle { zmq_socket_monitor(handle, nil, 0) }
    }

    private func open(_ operation: String) throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(code: ENOTSOCK, operation: operation) }
        return handle
    }

    // MARK: Endpoints

    public func bind(_ endpoint: String) throws(ZMQError) {
        let handle = try open("bind")
        guard zmq_bind(handle, endpoint) == 0 else { throw .last("bind \(endpoint)") }
    }

    public func connect(_ endpoint: String) throws(ZMQError) {
        let handle = try open("connect")
        guard zmq_connect(handle, endpoint) == 0 else { throw .last("connect \(endpoint)") }
    }

    public func disconnect(_ endpoint: String) throws(ZMQError) {
        let handle = try open("disconnect")
        guard zmq_disconnect(handle, endpoint) == 0 else { throw .last("disconnect \(endpoint)") }
    }

    /// The endpoint actually bound (resolves `tcp://host:*` to the chosen port).
    public func lastEndpoint() throws(ZMQError) -> String {
        let handle = try open("getsockopt")
        var buffer = [CChar](repeating: 0, count: 256)
        var size = buffer.count
        guard zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size) == 0 else {
            throw .last("getsockopt ZMQ_LAST_ENDPOINT")
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Options

    public func setOption(_ option: Int32, _ value: Int32) throws(ZMQError) {
        let handle = try open("setsockopt")
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size) == 0 else {
            throw .last("setsockopt \(option)")
        }
    }

    public func setOption(_ option: Int32, int64 value: Int64) throws(ZMQError) {
        let handle = try open("setsockopt")
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int64>.size) == 0 else {
            throw .last("setsockopt \(option)")
        }
    }

    public func setOption(_ option: Int32, bytes: [UInt8]) throws(ZMQError) {
        let handle = try open("setsockopt")
        let result = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard result == 0 else { throw .last("setsockopt \(option)") }
    }

    /// ROUTER only: fail sends to unknown or gone peers (EHOSTUNREACH) instead of dropping them.
    public func setRouterMandatory(_ on: Bool = true) throws(ZMQError) { try setOption(ZMQ_ROUTER_MANDATORY, on ? 1 : 0) }

    /// Peers sending a larger message are disconnected by libzmq before it is read.
    public func setMaxMessageSize(_ bytes: Int) throws(ZMQError) { try setOption(ZMQ_MAXMSGSIZE, int64: Int64(bytes)) }

    /// How long closing the socket (and terminating its context) waits for queued messages to
    /// go out.
    public func setLinger(_ linger: Duration) throws(ZMQError) {
        try setOption(ZMQ_LINGER, Int32(linger / .milliseconds(1)))
    }

    /// How soon a connecting socket retries after a refused or lost connection.
    public func setReconnectInterval(_ interval: Duration) throws(ZMQError) {
        try setOption(ZMQ_RECONNECT_IVL, Int32(interval / .milliseconds(1)))
    }

    /// Connection settings for cluster sockets, chosen around a libzmq 4.3 defect.
    ///
    /// No ZMTP heartbeats and no automatic reconnection: libzmq aborts the whole process
    /// (`Assertion failed: _input_stopped`, stream_engine_base.cpp) when a connection whose
    /// receive pipe is full (a busy receiver at its high-water mark) is dropped and then
    /// reconnected automatically, because a stale "pipe has room" notice reaches the new engine
    /// (zeromq/libzmq#3937, #4767, #3596). Heartbeat timeouts make exactly that happen under
    /// load. So the owner re-dials itself (`zmq_disconnect` + `zmq_connect` gives a fresh session
    /// and pipe) when its own application heartbeats say a peer went silent, and TCP keepalive
    /// lets the kernel clear connections to peers that vanished.
    ///
    /// Each connect attempt gives up after `connectTimeout`, so a re-dial during a partition
    /// does not hang in SYN retries and the next one after the heal goes through at once.
    public func setClusterConnectionOptions(connectTimeout: Duration, keepaliveIdle: Duration) throws(ZMQError) {
        try setOption(ZMQ_HEARTBEAT_IVL, 0)
        try setOption(ZMQ_RECONNECT_IVL, -1)
        try setConnectTimeout(connectTimeout)
        try setOption(ZMQ_TCP_KEEPALIVE, 1)
        try setOption(ZMQ_TCP_KEEPALIVE_IDLE, Int32(max(1, keepaliveIdle / .seconds(1))))
        try setOption(ZMQ_TCP_KEEPALIVE_INTVL, 1)
        try setOption(ZMQ_TCP_KEEPALIVE_CNT, 3)
    }

    /// How long the next TCP connect may take before libzmq gives it up (applies to later dials).
    public func setConnectTimeout(_ timeout: Duration) throws(ZMQError) {
        try setOption(ZMQ_CONNECT_TIMEOUT, Int32(max(1, timeout / .milliseconds(1))))
    }

    /// Drops the connection to `endpoint` (if any) and dials it again with a fresh pipe.
    public func redial(_ endpoint: String) throws(ZMQError) {
        try? disconnect(endpoint)
        try connect(endpoint)
    }

    /// Connection events a socket monitor reports (the ones Replica uses; others are `.other`).
    public enum MonitorEvent: Sendable, Equatable {
        /// The TCP connection of a connecting socket is up (its ZMTP handshake has yet to run).
        case connected
        /// A listening socket accepted a TCP connection (its handshake has yet to run).
        case accepted
        /// A connection was established and its ZMTP handshake completed.
        case handshakeSucceeded
        /// A connection was lost (closed by the peer, or dropped by ZMTP heartbeats).
        case disconnected
        /// A handshake failed: wrong mechanism (a plain client at a CURVE socket), a refused
        /// key, or a garbage greeting.
        case handshakeFailed
        case other(Int32)

        static let handshakeFailureBits =
            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

        var bits: Int32 {
            switch self {
            case .connected: ZMQ_EVENT_CONNECTED
            case .accepted: ZMQ_EVENT_ACCEPTED
            case .handshakeSucceeded: ZMQ_EVENT_HANDSHAKE_SUCCEEDED
            case .disconnected: ZMQ_EVENT_DISCONNECTED
            case .handshakeFailed: Self.handshakeFailureBits
            case .other(let bits): bits
            }
        }
    }

    /// Starts a socket monitor for `events` and returns the PAIR socket that receives them; read
    /// them with ``receiveMonitorEvent()``. The caller owns and closes the returned socket; this
    /// socket's `close()` stops the monitor first (see there).
    public func monitor(_ events: [MonitorEvent]) throws(ZMQError) -> ZMQSocket {
        let handle = try open("monitor")
        // A name never used before in this process: one made from the socket's address was
        // refused (EADDRINUSE) when a new socket got the address of a closed one whose monitor
        // libzmq had not unbound yet.
        let endpoint = "inproc://replica-monitor-\(Self.monitorNumbers.add(1, ordering: .relaxed).newValue)"
        let bits = events.reduce(Int32(0)) { $0 | $1.bits }
        guard zmq_socket_monitor(handle, endpoint, bits) == 0 else { throw .last("zmq_socket_monitor") }
        isMonitored = true
        let pair = try ZMQSocket(context: context, kind: .pair)
        pair.monitoredSocket = self
        try pair.connect(endpoint)
        return pair
    }

    /// Monitor sockets only: the next event, or nil if none is waiting. An event is two frames:
    /// a 16-bit event number and a 32-bit value (native byte order), then the endpoint.
    public func receiveMonitorEvent() throws(ZMQError) -> MonitorEvent? {
        try receiveMonitorNotice()?.event
    }

    /// One event of a socket monitor, with its value: for a connection's events, its file
    /// descriptor; for a failed handshake, why (`failure`).
    public struct MonitorNotice: Sendable, Equatable {
        public var event: MonitorEvent
        public var value: Int32
        public var failure: HandshakeFailure?

        public init(event: MonitorEvent, value: Int32, failure: HandshakeFailure?) {
            self.event = event
            self.value = value
            self.failure = failure
        }
    }

    /// The next event and its value, or nil if none is waiting. libzmq's first frame is the
    /// event (2 bytes) and the value (4 bytes), in the machine's byte order.
    public func receiveMonitorNotice() throws(ZMQError) -> MonitorNotice? {
        guard let message = try receive(maxFrames: 2) else { return nil }
        guard let first = message.frames.first, first.count >= 6 else { return MonitorNotice(event: .other(0), value: -1, failure: nil) }
        let number = Int32(first.withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) })
        let value = first.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 2, as: Int32.self) }
        let event: MonitorEvent = switch number {
        case ZMQ_EVENT_CONNECTED: .connected
        case ZMQ_EVENT_ACCEPTED: .accepted
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: .handshakeSucceeded
        case ZMQ_EVENT_DISCONNECTED: .disconnected
        case _ where number & MonitorEvent.handshakeFailureBits != 0: .handshakeFailed
        default: .other(number)
        }
        return MonitorNotice(event: event, value: value, failure: HandshakeFailure(event: number, value: value))
    }

    /// Makes this (binding) socket a CURVE server with `keys`: clients must know its public
    /// key, and each client key is checked by the ZAP handler of `zapDomain`.
    /// Without a ZAP domain every client that knows the server key is admitted.
    public func setCurveServer(_ keys: CurveKeyPair, zapDomain: String?) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, 1)
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: Array(keys.secretKey.utf8))
        if let zapDomain { try setOption(ZMQ_ZAP_DOMAIN, bytes: Array(zapDomain.utf8)) }
    }

    /// Makes this (connecting) socket a CURVE client with `keys` that only accepts a server
    /// holding the secret key of `serverKey`.
    public func setCurveClient(_ keys: CurveKeyPair, serverKey: String) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVERKEY, bytes: Array(serverKey.utf8))
        try setOption(ZMQ_CURVE_PUBLICKEY, bytes: Array(keys.publicKey.utf8))
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: Array(keys.secretKey.utf8))
    }

    /// SUB only: receive messages whose first frame starts with `prefix` (empty: everything).
    public func subscribe(_ prefix: [UInt8] = []) throws(ZMQError) {
        try setOption(ZMQ_SUBSCRIBE, bytes: prefix)
    }

    /// SUB only: undoes one ``subscribe(_:)`` of `prefix`.
    public func unsubscribe(_ prefix: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_UNSUBSCRIBE, bytes: prefix)
    }

    /// A subscription change an XPUB socket reports: libzmq passes on the first subscriber of a
    /// topic and the departure (unsubscribe or disconnect) of its last one.
    public enum SubscriptionChange: Equatable, Sendable {
        case subscribed([UInt8])
        case unsubscribed([UInt8])
    }

    /// XPUB only: the next subscription change, or nil if none is waiting, and who sent it
    /// (see ``ReceivedMessage/sender``).
    public func receiveSubscription() throws(ZMQError) -> (change: SubscriptionChange, sender: MessageSender?)? {
        guard let message = try receive(maxFrames: 1, identifyingSender: true), let frame = message.frames.first, let first = frame.first else {
            return nil
        }
        let topic = Array(frame.dropFirst())
        return (first == 1 ? .subscribed(topic) : .unsubscribed(topic), message.sender)
    }

    /// XPUB only: pass on every subscriber's subscriptions, not only a topic's first, so that
    /// every subscriber's connection is seen (see ``receiveSubscription()``).
    public func reportEverySubscription() throws(ZMQError) {
        try setOption(ZMQ_XPUB_VERBOSE, 1)
    }

    /// Sets send and receive high-water marks (messages queued per peer before drop/block).
    public func setHighWaterMarks(send: Int32, receive: Int32) throws(ZMQError) {
        try setOption(ZMQ_SNDHWM, send)
        try setOption(ZMQ_RCVHWM, receive)
    }

    // MARK: Messages

    /// Sends a multipart message. Returns false if it would block and `wait` is false.
    @discardableResult
    public func send(_ frames: [[UInt8]], wait: Bool = false) throws(ZMQError) -> Bool {
        let handle = try open("send")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = wait ? 0 : ZMQ_DONTWAIT
            if index < frames.count - 1 { flags |= ZMQ_SNDMORE }
            while true {
                let sent = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
                if sent >= 0 { break }
                let error = ZMQError.last("send")
                if error.isInterrupted { continue }
                // Only the first frame can block: later frames of a message are queued with it.
                if error.isWouldBlock && index == 0 { return false }
                throw error
            }
        }
        return true
    }

    /// Sends a one-frame message (no array of frames to build). Returns false if it would block
    /// and `wait` is false.
    @discardableResult
    public func send(frame: [UInt8], wait: Bool = false) throws(ZMQError) -> Bool {
        let handle = try open("send")
        while true {
            let sent = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, wait ? 0 : ZMQ_DONTWAIT) }
            if sent >= 0 { return true }
            let error = ZMQError.last("send")
            if error.isInterrupted { continue }
            if error.isWouldBlock { return false }
            throw error
        }
    }

    /// Waits until a message can be read, or `timeout` passes (nil: forever). Returns readiness.
    public func waitUntilReadable(timeout: Duration?) throws(ZMQError) -> Bool {
        let handle = try open("poll")
        var item = zmq_pollitem_t(socket: handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        let milliseconds = timeout.map { max(0, Int($0 / .milliseconds(1))) } ?? -1
        while true {
            let ready = zmq_poll(&item, 1, milliseconds)
            if ready >= 0 { return ready > 0 }
            let error = ZMQError.last("poll")
            if !error.isInterrupted { throw error }
        }
    }

    /// Receives one whole multipart message, or nil if none is waiting and `wait` is false.
    /// At most `maxFrames` frames are kept; the rest of an over-long message is read and dropped
    /// and reported by `truncated`. With `identifyingSender`, the message's connection is read
    /// from its metadata (two more libzmq calls: off on the hot paths).
    public func receive(wait: Bool = false, maxFrames: Int = 8, identifyingSender: Bool = false) throws(ZMQError) -> ReceivedMessage? {
        let handle = try open("receive")
        var frames: [[UInt8]] = []
        var truncated = false
        var sender: MessageSender?
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        while true {
            let flags: Int32 = (wait || !frames.isEmpty || truncated) ? 0 : ZMQ_DONTWAIT
            if zmq_msg_recv(&message, handle, flags) < 0 {
                let error = ZMQError.last("receive")
                if error.isInterrupted { continue }
                if error.isWouldBlock && frames.isEmpty && !truncated { return nil }
                throw error
            }
            if frames.count < maxFrames {
                let size = zmq_msg_size(&message)
                if let data = zmq_msg_data(&message), size > 0 {
                    frames.append(Array(UnsafeRawBufferPointer(start: data, count: size)))
                } else {
                    frames.append([])
                }
            } else {
                truncated = true
            }
            if zmq_msg_more(&message) == 0 {
                if identifyingSender { sender = MessageSender(of: &message) }
                break
            }
        }
        return ReceivedMessage(frames: frames, truncated: truncated, sender: sender)
    }
}

/// The connection a message arrived on, from libzmq's metadata of the message.
public struct MessageSender: Sendable, Equatable {
    /// The TCP connection's file descriptor (`ZMQ_SRCFD`). libzmq owns it.
    public var descriptor: Int32
    /// The user id the ZAP handler gave the connection at its handshake (under CURVE, the
    /// client's public key in Z85), or nil without one.
    public var userID: String?

    public init(descriptor: Int32, userID: String?) {
        self.descriptor = descriptor
        self.userID = userID
    }

    init?(of message: inout zmq_msg_t) {
        let descriptor = zmq_msg_get(&message, ZMQ_SRCFD)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        userID = zmq_msg_gets(&message, "User-Id").map { String(cString: $0) }
    }
}

/// A multipart message as received.
public struct ReceivedMessage: Sendable {
    public var frames: [[UInt8]]
    /// True when the sender sent more frames than the receiver keeps.
    public var truncated: Bool
    /// The connection it came on, when asked for (`receive(identifyingSender:)`).
    public var sender: MessageSender?

    public init(frames: [[UInt8]], truncated: Bool, sender: MessageSender? = nil) {
        self.frames = frames
        self.truncated = truncated
        self.sender = sender
    }
}
