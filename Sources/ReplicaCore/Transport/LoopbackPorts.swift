import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Hands out loopback port pairs (PORT for PUB, PORT + 1 for ROUTER) for tests, benchmarks and
/// local clusters: below Linux's ephemeral range (32768 and up), so an outgoing connection can
/// never be holding one, and each checked free by binding it first.
public final class LoopbackPorts: Sendable {
    private let next: Mutex<UInt16>
    private let range: Range<UInt16>

    /// Ports from `range`, starting at an offset chosen by process id so that concurrent
    /// processes start apart.
    public init(range: Range<UInt16>) {
        self.range = range
        let span = UInt32(range.count / 2)
        next = Mutex(range.lowerBound + UInt16((UInt32(getpid()) * 7919 % span) * 2))
    }

    /// The next pair whose two ports are both free right now.
    public func pair() -> UInt16 {
        next.withLock { port in
            for _ in 0..<(range.count / 2) {
                let candidate = port
                port = port + 2 >= range.upperBound ? range.lowerBound : port + 2
                if Self.isFree(candidate) && Self.isFree(candidate + 1) { return candidate }
            }
            preconditionFailure("no free loopback port pair in \(range)")
        }
    }

    private static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
