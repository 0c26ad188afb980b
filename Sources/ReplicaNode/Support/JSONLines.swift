import Foundation
import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// The input of `import`: one `{"key": "...", "value": <any JSON>}` per line; blank lines are
/// skipped, other members ignored, except those `get --json` prints that change what is stored:
/// `"encoding": "base64"` (the value is a string of base64: its bytes are stored, not the
/// string) and `"schema": N`. So a register exported with `get --json` comes back as it was.
/// The client checks every line before writing anything, and the node checks each batch again
/// (the control socket is an interface of its own).
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
        /// The bytes to store, decoded from base64 (`"encoding": "base64"`); nil for a JSON value.
        var decoded: [UInt8]?
        var schema: UInt16
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
            if let item = try parse(line, at: start..<end, number: number) { try body(item, line) }
            start = end + 1
            number += 1
        }
    }

    /// The index of the next newline at or after `start` (or the end).
    private static func lineEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress, let found = memchr(base + start, 0x0A, bytes.count - start) else { return bytes.count }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// The members that decide what a line stores; any other is ignored.
    private static let storedMembers: Set<String> = ["key", "value", "encoding", "schema"]

    private struct RepeatedMember: Error {
        var name: String
    }

    /// The key and value of one line, or nil for a blank line.
    private static func parse(_ line: UnsafeBufferPointer<UInt8>, at range: Range<Int>, number: Int) throws(BadLine) -> Item? {
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
        var encoding: String?
        var schemaText: String?
        // A member that says what is stored, given twice: JSON leaves which one counts to the
        // reader (this one took the last), so the line is refused rather than half of it ignored.
        var named: Set<String> = []
        do {
            try scanner.expect(UInt8(ascii: "{"), "'{'")
            if !scanner.consume(UInt8(ascii: "}")) {
                repeat {
                    scanner.skipWhitespace()
                    guard scanner.next == UInt8(ascii: "\"") else { throw scanner.fail("expected a member name") }
                    let name = try scanner.readString()
                    if Self.storedMembers.contains(name), !named.insert(name).inserted { throw RepeatedMember(name: name) }
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
                    case "encoding" where scanner.next == UInt8(ascii: "\""):
                        encoding = try scanner.readString()
                    case "encoding":
                        encoding = ""
                        _ = try scanner.scanValue()
                    case "schema":
                        let found = try scanner.scanValue()
                        schemaText = String(decoding: UnsafeBufferPointer(rebasing: line[found.range]), as: UTF8.self)
                    default:
                        _ = try scanner.scanValue()
                    }
                } while scanner.consume(UInt8(ascii: ","))
                try scanner.expect(UInt8(ascii: "}"), "',' or '}'")
            }
            scanner.skipWhitespace()
            guard scanner.atEnd else { throw scanner.fail("unexpected text after the object") }
        } catch let repeated as RepeatedMember {
            throw BadLine(line: number, reason: "\"\(repeated.name)\" appears twice in the object: give it once")
        } catch {
            throw BadLine(line: number, reason: "not a JSON object (\(error))")
        }
        guard sawKey else { throw BadLine(line: number, reason: "missing \"key\"") }
        guard keyIsString, let key else { throw BadLine(line: number, reason: "\"key\" must be a string (a JSON number or other value is not a key)") }
        guard !key.isEmpty else { throw BadLine(line: number, reason: "\"key\" is empty") }
        guard !FamilyKey.isReserved(key) else { throw BadLine(line: number, reason: ReservedKey.message) }
        guard let value else { throw BadLine(line: number, reason: "missing \"value\"") }
        var schema: UInt16 = 0
        if let schemaText {
            guard let parsed = UInt16(schemaText) else {
                throw BadLine(line: number, reason: "\"schema\" must be a whole number from 0 to 65535, not \(schemaText)")
            }
            schema = parsed
        }
        switch encoding {
        case nil, "json":
            return Item(key: key, value: value, decoded: nil, schema: schema, line: range, number: number)
        case "base64":
            var reader = JSONScanner(line, from: value.range.lowerBound)
            guard reader.next == UInt8(ascii: "\""), let text = try? reader.readString(), let bytes = Data(base64Encoded: text) else {
                throw BadLine(line: number, reason: "\"encoding\" is \"base64\" but \"value\" is not a string of base64")
            }
            return Item(key: key, value: value, decoded: Array(bytes), schema: schema, line: range, number: number)
        default:
            throw BadLine(line: number, reason: "\"encoding\" must be \"json\" or \"base64\" (as `get --json` prints it)")
        }
    }
}

/// Keys starting with U+001F belong to counters and logs; clients may not write them directly.
enum ReservedKey {
    static let message = "keys starting with U+001F are reserved for counters and logs"
}
