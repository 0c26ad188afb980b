import CZMQ

/// A libzmq context. Thread-safe, as libzmq documents.
///
/// Every socket keeps a strong reference to its context, so the context is terminated
/// (`zmq_ctx_term`, which waits for open sockets) only after its last socket has closed.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else { throw .last("zmq_ctx_new") }
        self.handle = handle
        zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads)
        // Our processes handle SIGINT/SIGTERM themselves; libzmq must not install handlers.
        zmq_ctx_set(handle, ZMQ_BLOCKY, 0)
    }

    deinit {
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// Opens a socket of the given kind in this context.
    public func socket(_ kind: ZMQSocket.Kind) throws(ZMQError) -> ZMQSocket {
        try ZMQSocket(context: self, kind: kind)
    }
}
