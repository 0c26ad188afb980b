import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// The input of `import`: one `{"key": "...", "value": <any JSON>}` per line; blank lines are
/// skipped, other members ignored. The client checks every line before writing anything, and
/// the node checks each batch again (the control socket is an interface of its own).
enum JSONLines {
    struct BadLine: Error, Equatable, CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason); nothing was written" }
    }

    /// One line's key and where its value lies in the line.
    struct Item {
        var key: String
        var value: JSONScanner.Value
        /// The line's bytes in the input, without the newline.
        var line: Range<Int>
        /// The line's number (from `firstLine`), for `BadLine`s `body` throws.
        var number: Int
    }

    /// Calls `body` with every item of `bytes` in order, and the line it is on; throws at the
    /// first bad line (numbered from `firstLine`), or what `body` throws.
    static func forEachItem(
        in bytes: UnsafeBufferPointer<UInt8>, firstLine: Int = 1, _ body: (Item, UnsafeBufferPointer<UInt8>) throws(BadLine) -> Void
    ) throws(BadLine) {
        var start = 0
        var number = firstLine
        while start < bytes.count {
            let end = lineEnd(in: bytes, from: start)
            let line = UnsafeBufferPointer(rebasing: bytes[start..<end])
            if let item = try parse(line, number: number) {
                try body(Item(key: item.key, value: item.value, line: start..<end, number: number), line)
            }
            start = end + 1
            number += 1
        }
    }

    /// The index of the next newline at or after `start` (or the end).
    private static func lineEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress, let found = memchr(base + start, 0x0A, bytes.count - start) else { return bytes.count }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// The key and value of one line, or nil for a blank line.
    private static func parse(_ line: UnsafeBufferPointer<UInt8>, number: Int) throws(BadLine) -> (key: String, value: JSONScanner.Value)? {
        if number == 1, line.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw BadLine(line: number, reason: "the file starts with a UTF-8 byte order mark (EF BB BF): save it without one")
        }
        var scanner = JSONScanner(line)
        scanner.skipWhitespace()
        if scanner.atEnd { return nil }
        var key: String?
        var keyIsString = false
        var sawKey = false
        var value: JSONScanner.Value?
        do {
            try scanner.expect(UInt8(ascii: "{"), "'{'")
            if !scanner.consume(UInt8(ascii: "}")) {
                repeat {
                    scanner.skipWhitespace()
                    guard scanner.next == UInt8(ascii: "\"") else { throw scanner.fail("expected a member name") }
                    let name = try scanner.readString()
                    try scanner.expect(UInt8(ascii: ":"), "':'")
                    scanner.skipWhitespace()
                    switch name {
                    case "key" where scanner.next == UInt8(ascii: "\""):
                        key = try scanner.readString()
                        keyIsString = true
                        sawKey = true
                    case "key":
                        _ = try scanner.scanValue()
                        keyIsString = false
                        sawKey = true
                    case "value":
                        value = try scanner.scanValue()
                    default:
                        _ = try scanner.scanValue()
                    }
                } while scanner.consume(UInt8(ascii: ","))
                try scanner.expect(UInt8(ascii: "}"), "',' or '}'")
            }
            scanner.skipWhitespace()
            guard scanner.atEnd else { throw scanner.fail("unexpected text after the object") }
        } catch {
            throw BadLine(line: number, reason: "not a JSON object (\(error))")
        }
        guard sawKey else { throw BadLine(line: number, reason: "missing \"key\"") }
        guard keyIsString, let key else { throw BadLine(line: number, reason: "\"key\" must be a string (a JSON number or other value is not a key)") }
        guard !key.isEmpty else { throw BadLine(line: number, reason: "\"key\" is empty") }
        guard !FamilyKey.isReserved(key) else { throw BadLine(line: number, reason: ReservedKey.message) }
        guard let value else { throw BadLine(line: number, reason: "missing \"value\"") }
        return (key, value)
    }
}

/// Keys starting with U+001F belong to counters and logs; clients may not write them directly.
enum ReservedKey {
    static let message = "keys starting with U+001F are reserved for counters and logs"
}
