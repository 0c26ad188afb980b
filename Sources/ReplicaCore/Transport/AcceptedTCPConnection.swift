import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ends one TCP connection that a bound libzmq socket accepted, which libzmq itself offers no
/// way to do: `zmq_unbind` closes the listener but keeps the connections it accepted, and a
/// CURVE key is checked only at the handshake. So a connection whose key is revoked is shut
/// down under libzmq (`shutdown(2)`, not `close(2)`: libzmq reads the end of the stream, tears
/// its side down and closes the descriptor itself), and the peer's next handshake is refused.
enum AcceptedTCPConnection {
    /// Shuts down the connection on `descriptor` if it still is a TCP connection accepted on one
    /// of `localPorts` (descriptors are reused: one recorded earlier may since be another file,
    /// or a listening socket, which a shutdown would stop accepting). Returns whether it was.
    static func shutDown(descriptor: Int32, ifLocalPortIn localPorts: Set<UInt16>) -> Bool {
        guard let port = localPort(of: descriptor), localPorts.contains(port) else { return false }
        return shutdown(descriptor, Int32(SHUT_RDWR)) == 0
    }

    /// The local port of a connected (not listening) TCP socket, or nil for anything else.
    static func localPort(of descriptor: Int32) -> UInt16? {
        var type: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == streamType,
              getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 0
        else { return nil }
        var address = sockaddr_storage()
        var addressLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &addressLength) }
        }
        guard named == 0 else { return nil }
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
        case AF_INET6:
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        default:
            return nil
        }
    }

    #if canImport(Glibc)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    #else
    private static let streamType = SOCK_STREAM
    #endif
}
