import CZMQ

/// An error reported by libzmq, carrying `zmq_errno()` and its message.
public struct ZMQError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The C errno value libzmq reported.
    public let code: Int32
    /// What was being attempted, for the message.
    public let operation: String

    public var description: String {
        "\(operation): \(String(cString: zmq_strerror(code))) (errno \(code))"
    }

    /// An error with errno `code` (a simulated socket's).
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// Captures the calling thread's `zmq_errno()` right after a failed call.
    static func last(_ operation: String) -> ZMQError {
        ZMQError(code: zmq_errno(), operation: operation)
    }

    /// The socket would block (non-blocking send or receive found nothing to do).
    var isWouldBlock: Bool { code == EAGAIN }
    /// The call was interrupted by a signal; retrying is correct.
    var isInterrupted: Bool { code == EINTR }
}
