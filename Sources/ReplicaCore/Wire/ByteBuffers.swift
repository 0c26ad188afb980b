/// Appends big-endian fields to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Writes into `buffer`, emptied but keeping its capacity: a buffer reused for every
    /// message costs no allocation once it has grown to the largest.
    init(reusing buffer: consuming [UInt8]) {
        bytes = buffer
        bytes.removeAll(keepingCapacity: true)
    }

    var count: Int { bytes.count }

    mutating func write(_ value: UInt8) { bytes.append(value) }
    mutating func write(_ value: UInt16) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func write<Bytes: Collection<UInt8>>(raw: Bytes) { bytes.append(contentsOf: raw) }
    /// A string's UTF-8 bytes, without an intermediate array.
    mutating func write(utf8 string: String) {
        var string = string
        string.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Overwrites a big-endian UInt16 written earlier at `offset` (a count known only at the end).
    mutating func patch(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(value >> 8)
        bytes[offset + 1] = UInt8(value & 0xff)
    }
}

/// Reads big-endian fields from a byte array; every read is bounds-checked and throws
/// `WireError.truncated` instead of reading past the end.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int

    /// Reads `bytes` from `offset` (a published frame's body starts after its topic).
    init(_ bytes: [UInt8], from offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

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

    /// `count` bytes of UTF-8, validated in place (no intermediate array); nil if not UTF-8.
    ///
    /// ASCII, almost every key, is valid as it is: one pass over the bytes tells, and the string
    /// is made without a second look. Anything else is decoded, repairing, and kept only if
    /// nothing was repaired (the bytes came out as they went in). (`String(validating:as:)` over
    /// an array slice ran unspecialised, looking up generic metadata per call: 4% of a
    /// receiver's time in the replication benchmark.)
    mutating func readString(_ count: Int) throws(WireError) -> String? {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { offset += count }
        return bytes.withUnsafeBufferPointer { all in
            let field = UnsafeBufferPointer(rebasing: all[offset..<offset + count])
            let string = String(decoding: field, as: UTF8.self)
            if field.reduce(0, |) < 0x80 { return string }
            return string.utf8.elementsEqual(field) ? string : nil
        }
    }

    /// Fails unless every byte was consumed: trailing garbage is malformed, not ignored.
    func expectEnd() throws(WireError) {
        guard remaining == 0 else { throw .trailingBytes(remaining) }
    }
}
