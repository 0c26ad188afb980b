import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A UDP socket that broadcasts small datagrams on the local network segment and receives them:
/// the transport of discovery beacons (`serve --discover`), as Zyre's beacons.
///
/// Every node on the segment binds the same port (SO_REUSEADDR, so several nodes on one host can
/// too: Linux hands a broadcast datagram to each of them). Datagrams go to the broadcast address
/// of each IPv4 interface that is up and can broadcast, or only of the one holding `interfaceAddress`.
/// Owned by one actor, like a `ZMQSocket`; poll its `fileDescriptor`.
public final class UDPBeaconSocket: @unchecked Sendable {
    public let port: UInt16
    public private(set) var fileDescriptor: Int32
    private let interfaceAddress: String?

    public struct Failure: Error, CustomStringConvertible {
        public var operation: String
        public var code: Int32
        public var description: String { "\(operation): \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// Binds `port` on every interface. `interfaceAddress`: broadcast only on the interface that
    /// holds this IPv4 address (nil or a wildcard: on every interface).
    public init(port: UInt16, interfaceAddress: String? = nil) throws {
        self.port = port
        self.interfaceAddress = interfaceAddress.flatMap { Endpoint.isWildcard(host: $0) ? nil : $0 }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(operation: "socket", code: errno) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(operation: "bind UDP port \(port)", code: code)
        }
        fileDescriptor = fd
    }

    deinit { close() }

    public func close() {
        guard fileDescriptor >= 0 else { return }
        #if canImport(Glibc)
        _ = Glibc.close(fileDescriptor)
        #else
        _ = Darwin.close(fileDescriptor)
        #endif
        fileDescriptor = -1
    }

    /// The broadcast addresses datagrams go to now (interfaces come and go, so asked each time).
    public func broadcastAddresses() -> [in_addr] { Self.broadcastAddresses(interfaceAddress: interfaceAddress) }

    /// The broadcast addresses of the IPv4 interfaces that are up and can broadcast, or of the one
    /// holding `interfaceAddress` (nil or a wildcard: every interface): where beacons would go.
    public static func broadcastAddresses(interfaceAddress: String?) -> [in_addr] {
        let interfaceAddress = interfaceAddress.flatMap { Endpoint.isWildcard(host: $0) ? nil : $0 }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [in_addr] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let item = cursor {
            defer { cursor = item.pointee.ifa_next }
            let flags = Int32(item.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_BROADCAST) != 0,
                  let address = item.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET)
            else { continue }
            let own = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            if let interfaceAddress, Self.text(of: own) != interfaceAddress { continue }
            var broadcast = Self.broadcastPointer(of: item)?.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            if let mask = item.pointee.ifa_netmask, broadcast == nil || broadcast?.s_addr == 0 || broadcast?.s_addr == own.s_addr {
                // An address added without a broadcast address (`ip addr add A/N`) reports none,
                // or its own: the subnet's is the address with every host bit set.
                let bits = mask.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                broadcast = in_addr(s_addr: own.s_addr | ~bits)
            }
            if let broadcast, broadcast.s_addr != 0, broadcast.s_addr != own.s_addr { result.append(broadcast) }
        }
        return result
    }

    private static func broadcastPointer(of item: UnsafeMutablePointer<ifaddrs>) -> UnsafeMutablePointer<sockaddr>? {
        #if canImport(Glibc)
        item.pointee.ifa_ifu.ifu_broadaddr
        #else
        item.pointee.ifa_dstaddr
        #endif
    }

    /// Sends `bytes` to every broadcast address; returns how many sends succeeded.
    @discardableResult
    public func broadcast(_ bytes: [UInt8]) -> Int {
        guard fileDescriptor >= 0 else { return 0 }
        var sent = 0
        for target in broadcastAddresses() {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = target
            let result = bytes.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fileDescriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            if result == bytes.count { sent += 1 }
        }
        return sent
    }

    /// The next datagram (at most 512 bytes are kept) and its sender's IPv4 address, or nil.
    public func receive() -> (bytes: [UInt8], sender: String)? {
        guard fileDescriptor >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1024)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fileDescriptor, raw.baseAddress, raw.count, 0, $0, &length) }
            }
        }
        guard count >= 0 else { return nil }
        return (Array(buffer.prefix(count)), Self.text(of: address.sin_addr))
    }

    static func text(of address: in_addr) -> String {
        var address = address
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
