import Foundation

/// A `HOST:PORT` a node listens on or connects to.
///
/// A node uses two consecutive TCP ports: `PORT` for its PUB socket (updates and heartbeats)
/// and `PORT + 1` for its ROUTER socket (anti-entropy sync). Peers are named by `PORT`.
public struct Endpoint: Hashable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses a node's `HOST:PORT` (`[v6]:PORT` for IPv6). Fails on a missing host, a port
    /// outside 1...65534 (PORT + 1 must exist too) or a stray colon.
    public init?(_ description: String) {
        self.init(description, highestPort: .max - 1)
    }

    /// Parses the `HOST:PORT` of a single port (`--metrics`): any port in 1...65535.
    public init?(singlePort description: String) {
        self.init(description, highestPort: .max)
    }

    private init?(_ description: String, highestPort: UInt16) {
        let text = description.trimmingCharacters(in: .whitespaces)
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.allSatisfy({ !$0.isWhitespace }),
              let port = UInt16(text[text.index(after: colon)...]), port > 0, port <= highestPort
        else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether this is a wildcard listen address (any interface) rather than one address.
    public var isWildcard: Bool { Self.isWildcard(host: host) }

    /// Whether `host` stands for any interface rather than one address.
    public static func isWildcard(host: String) -> Bool { ["0.0.0.0", "*", "::", ""].contains(host) }

    /// The ZeroMQ endpoint of the PUB socket.
    public var publishAddress: String { "tcp://\(description)" }
    /// The port of the ROUTER (sync) socket: the one after `port`.
    public var syncPort: UInt16 { port + 1 }
    /// The ZeroMQ endpoint of the ROUTER (sync) socket.
    public var syncAddress: String { "tcp://\(Endpoint(host: host, port: syncPort).description)" }

    /// `address` (a `tcp://` endpoint) connected from `source`'s host, libzmq's
    /// `tcp://SOURCE:0;DEST` form. Outgoing connections then carry the node's own address, so
    /// firewall rules (and the partition tests) can tell nodes apart by source address.
    public static func connecting(to address: String, from source: Endpoint) -> String {
        guard !source.isWildcard else { return address }
        let bare = address.dropFirst("tcp://".count)
        let sourceHost = source.host.contains(":") ? "[\(source.host)]" : source.host
        return "tcp://\(sourceHost):0;\(bare)"
    }
}

extension Endpoint {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let endpoint = Endpoint(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not HOST:PORT: \(text)")
        }
        self = endpoint
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
