/// The seam between a replica and its network: the socket operations it uses, as libzmq's
/// `ZMQSocket` provides them, or a simulated network's (the `ReplicaSimulation` library).
/// Options a simulation has no use for (message sizes, keepalive, CURVE) default to nothing.
public protocol MessageSocket: AnyObject, Sendable {
    /// False once closed.
    var isOpen: Bool { get }
    /// The libzmq socket `zmq_poll` waits on; nil for a closed or simulated socket. (A
    /// requirement, not a cast: the poll loop reads it every turn.)
    var pollHandle: UnsafeMutableRawPointer? { get }
    func bind(_ endpoint: String) throws(ZMQError)
    func connect(_ endpoint: String) throws(ZMQError)
    /// Drops the connection to `endpoint` and dials it again.
    func redial(_ endpoint: String) throws(ZMQError)
    func close()
    /// False if it would block (a full queue, or no peer to take it).
    func send(_ frames: [[UInt8]], wait: Bool) throws(ZMQError) -> Bool
    func send(frame: [UInt8], wait: Bool) throws(ZMQError) -> Bool
    /// One whole message, or nil if none waits (and `wait` is false).
    func receive(wait: Bool, maxFrames: Int, identifyingSender: Bool) throws(ZMQError) -> ReceivedMessage?
    func subscribe(_ prefix: [UInt8]) throws(ZMQError)
    func unsubscribe(_ prefix: [UInt8]) throws(ZMQError)
    /// An XPUB's next subscription change, and the connection it came on.
    func receiveSubscription() throws(ZMQError) -> (change: ZMQSocket.SubscriptionChange, sender: MessageSender?)?
    /// Starts watching this socket's connections; returns the socket the events arrive on.
    func monitorConnections(_ events: [ZMQSocket.MonitorEvent]) throws(ZMQError) -> any MessageSocket
    func receiveMonitorNotice() throws(ZMQError) -> ZMQSocket.MonitorNotice?
    func setHighWaterMarks(send: Int32, receive: Int32) throws(ZMQError)
    func setMaxMessageSize(_ bytes: Int) throws(ZMQError)
    func setClusterConnectionOptions(connectTimeout: Duration, keepaliveIdle: Duration) throws(ZMQError)
    func setConnectTimeout(_ timeout: Duration) throws(ZMQError)
    func setRouterMandatory(_ on: Bool) throws(ZMQError)
    func reportEverySubscription() throws(ZMQError)
    func setCurveServer(_ keys: CurveKeyPair, zapDomain: String?) throws(ZMQError)
    func setCurveClient(_ keys: CurveKeyPair, serverKey: String) throws(ZMQError)
}

extension MessageSocket {
    @discardableResult
    public func send(_ frames: [[UInt8]]) throws(ZMQError) -> Bool { try send(frames, wait: false) }
    @discardableResult
    public func send(frame: [UInt8]) throws(ZMQError) -> Bool { try send(frame: frame, wait: false) }
    public func receive(maxFrames: Int = 8, identifyingSender: Bool = false) throws(ZMQError) -> ReceivedMessage? {
        try receive(wait: false, maxFrames: maxFrames, identifyingSender: identifyingSender)
    }
    public var pollHandle: UnsafeMutableRawPointer? { nil }
    public func setMaxMessageSize(_ bytes: Int) throws(ZMQError) {}
    public func setClusterConnectionOptions(connectTimeout: Duration, keepaliveIdle: Duration) throws(ZMQError) {}
    public func setConnectTimeout(_ timeout: Duration) throws(ZMQError) {}
    public func setRouterMandatory(_ on: Bool) throws(ZMQError) {}
    public func reportEverySubscription() throws(ZMQError) {}
    public func setCurveServer(_ keys: CurveKeyPair, zapDomain: String?) throws(ZMQError) {}
    public func setCurveClient(_ keys: CurveKeyPair, serverKey: String) throws(ZMQError) {}
}

/// Makes the sockets of one node: libzmq's context, or a simulated host.
public protocol SocketFactory: Sendable {
    func makeSocket(_ kind: ZMQSocket.Kind) throws(ZMQError) -> any MessageSocket
}

extension ZMQSocket: MessageSocket {
    public var isOpen: Bool { handle != nil }
    public var pollHandle: UnsafeMutableRawPointer? { handle }

    public func monitorConnections(_ events: [MonitorEvent]) throws(ZMQError) -> any MessageSocket {
        try monitor(events)
    }
}

extension ZMQContext: SocketFactory {
    public func makeSocket(_ kind: ZMQSocket.Kind) throws(ZMQError) -> any MessageSocket {
        try socket(kind)
    }
}
