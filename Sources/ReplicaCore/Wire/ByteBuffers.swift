/// Appends big-endian fields to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func write(_ value: UInt8) { bytes.append(value) }
    mutating func write(_ value: UInt16) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write<Bytes: Collection<UInt8>>(raw: Bytes) { bytes.append(contentsOf: raw) }
}

/// Reads big-endian fields from a byte array; every read is bounds-checked and throws
/// `WireError.truncated` instead of reading past the end.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func readByte() throws(WireError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws(WireError) -> UInt16 { UInt16(try readInteger(width: 2)) }
    mutating func readUInt32() throws(WireError) -> UInt32 { UInt32(try readInteger(width: 4)) }
    mutating func readUInt64() throws(WireError) -> UInt64 { try readInteger(width: 8) }

    private mutating func readInteger(width: Int) throws(WireError) -> UInt64 {
        guard remaining >= width else { throw .truncated }
        var value: UInt64 = 0
        for index in offset..<offset + width { value = value << 8 | UInt64(bytes[index]) }
        offset += width
        return value
    }

    mutating func readBytes(_ count: Int) throws(WireError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Fails unless every byte was consumed: trailing garbage is malformed, not ignored.
    func expectEnd() throws(WireError) {
        guard remaining == 0 else { throw .trailingBytes(remaining) }
    }
}
