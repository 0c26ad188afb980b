/// Why a received message was dropped. Every case is counted; none reaches the store.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated
    case badMagic(UInt8)
    case unsupportedVersion(UInt8)
    case unknownKind(UInt8)
    case invalidField(String)
    case tooLarge(field: String, size: Int, limit: Int)
    case trailingBytes(Int)
    case wrongFrameCount(Int)
    case topicMismatch

    public var description: String {
        switch self {
        case .truncated: "message ends early"
        case .badMagic(let byte): "bad magic byte 0x\(String(byte, radix: 16))"
        case .unsupportedVersion(let version): "unsupported protocol version \(version)"
        case .unknownKind(let kind): "unknown message kind \(kind)"
        case .invalidField(let field): "invalid \(field)"
        case .tooLarge(let field, let size, let limit): "\(field) of \(size) bytes exceeds the limit of \(limit)"
        case .trailingBytes(let count): "\(count) unexpected bytes after the message"
        case .wrongFrameCount(let count): "unexpected number of frames (\(count))"
        case .topicMismatch: "topic frame does not match the message"
        }
    }
}
