/// Why a received message was dropped. Every case is counted; none reaches the store.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated
    case badMagic(UInt8)
    case unsupportedVersion(UInt8)
    case unknownKind(UInt8)
    /// A known kind on a socket that never carries it (a sync request on PUB/SUB, an update sent
    /// to the ROUTER): `socket` names where it arrived.
    case misplacedKind(UInt8, socket: String)
    case invalidField(String)
    case tooLarge(field: String, size: Int, limit: Int)
    case trailingBytes(Int)
    /// `received` frames where another number was expected; `more` when the receiver stopped
    /// reading at `received` and there were more.
    case wrongFrameCount(Int, more: Bool = false)
    case topicMismatch

    public var description: String {
        switch self {
        case .truncated: "message ends early"
        case .badMagic(let byte): "bad magic byte 0x\(String(byte, radix: 16))"
        case .unsupportedVersion(let version): "unsupported protocol version \(version)"
        case .unknownKind(let kind): "unknown message kind \(kind)"
        case .misplacedKind(let kind, let socket):
            "message kind \(kind)\(WireMessage.Kind(rawValue: kind).map { " (\($0.name))" } ?? "") does not belong on \(socket)"
        case .invalidField(let field): "invalid \(field)"
        case .tooLarge(let field, let size, let limit) where field.hasSuffix(" count"):
            "\(field) \(size) exceeds the limit of \(limit)"
        case .tooLarge(let field, let size, let limit): "\(field) of \(size) bytes exceeds the limit of \(limit)"
        case .trailingBytes(let count): "\(count) unexpected bytes after the message"
        case .wrongFrameCount(let count, let more): "unexpected number of frames (\(more ? "more than " : "")\(count))"
        case .topicMismatch: "topic frame does not match the message"
        }
    }
}
