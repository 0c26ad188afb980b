/// JSON text (RFC 8259) checked byte by byte, without building values.
///
/// The CLI moves JSON values as the bytes the user gave: `set` and `import` only need to know
/// that a value is one well-formed JSON value (and drop insignificant whitespace), and `get
/// --json` only whether stored bytes are JSON it can embed. Parsing into Foundation objects and
/// encoding them again (`JSONSerialization`) cost `import` most of its time, and rounded numbers.
enum JSONText {
    /// Why bytes are not the JSON expected.
    struct Invalid: Error, Equatable, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// Nesting deeper than this is refused (the scanner recurses once per level).
    static let maxDepth = 512

    /// `bytes` without insignificant whitespace, if they are exactly one JSON value (whitespace
    /// around it allowed); nil otherwise.
    static func minified(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            guard let value = try? scanner.wholeValue() else { return nil }
            return scanner.minified(value)
        }
    }

    /// Whether `bytes` are exactly one JSON value (whitespace around it allowed).
    static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            return (try? scanner.wholeValue()) != nil
        }
    }

    /// The bytes of `string` as Foundation's `JSONEncoder` writes it, quotes included: a
    /// control character takes 6 (`\u001f`, or 2 for `\n` and the like), `"`, `\\` and `/` 2
    /// (it escapes the slash), any other byte 1. (A reserved key has one U+001F and two
    /// slashes: counting bytes alone undercounted it by 7.)
    static func encodedLength(ofString string: String) -> Int {
        string.utf8.reduce(2) { length, byte in
            switch byte {
            case 0x08, 0x09, 0x0A, 0x0C, 0x0D, UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): length + 2
            case ..<0x20: length + 6
            default: length + 1
            }
        }
    }
}

/// A cursor over JSON bytes. Every `skip` and `read` checks the grammar of what it passes,
/// strings included (escapes, control characters, UTF-8), and throws `JSONText.Invalid`.
struct JSONScanner {
    /// Where a scanned value lies, and whether it contains whitespace to drop when minifying.
    struct Value {
        var range: Range<Int>
        var hasWhitespace: Bool
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    private var sawWhitespace = false

    init(_ bytes: UnsafeBufferPointer<UInt8>, from position: Int = 0) {
        self.bytes = bytes
        self.position = position
    }

    var atEnd: Bool { position >= bytes.count }

    /// One value with only whitespace around it, up to the end of the bytes.
    mutating func wholeValue() throws(JSONText.Invalid) -> Value {
        skipWhitespace()
        let value = try scanValue()
        skipWhitespace()
        guard atEnd else { throw fail("unexpected text after the value") }
        return value
    }

    /// Scans the value at the cursor and returns where it lies.
    mutating func scanValue() throws(JSONText.Invalid) -> Value {
        sawWhitespace = false
        let start = position
        try skipValue(depth: 0)
        return Value(range: start..<position, hasWhitespace: sawWhitespace)
    }

    /// The bytes of `value` without insignificant whitespace.
    func minified(_ value: Value) -> [UInt8] {
        guard value.hasWhitespace else { return Array(bytes[value.range]) }
        var out: [UInt8] = []
        out.reserveCapacity(value.range.count)
        var inString = false
        var escaped = false
        for byte in bytes[value.range] {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                out.append(byte)
            } else if !Self.isWhitespace(byte) {
                if byte == UInt8(ascii: "\"") { inString = true }
                out.append(byte)
            }
        }
        return out
    }

    mutating func skipWhitespace() {
        while position < bytes.count, Self.isWhitespace(bytes[position]) {
            position += 1
            sawWhitespace = true
        }
    }

    /// Consumes `byte` (after whitespace) or throws.
    mutating func expect(_ byte: UInt8, _ what: String) throws(JSONText.Invalid) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { throw fail("expected \(what)") }
        position += 1
    }

    /// Consumes `byte` if it is next (after whitespace).
    mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    var next: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Reads a string at the cursor, decoding its escapes.
    mutating func readString() throws(JSONText.Invalid) -> String {
        let start = position + 1
        var hasEscapes = false
        try skipString(hasEscapes: &hasEscapes)
        let raw = UnsafeBufferPointer(rebasing: bytes[start..<position - 1])
        guard hasEscapes else { return String(decoding: raw, as: UTF8.self) }
        return Self.unescape(raw)
    }

    private mutating func skipValue(depth: Int) throws(JSONText.Invalid) {
        guard depth < JSONText.maxDepth else { throw fail("nested deeper than \(JSONText.maxDepth) levels") }
        skipWhitespace()
        guard let byte = next else { throw fail("expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            position += 1
            if consume(UInt8(ascii: "}")) { return }
            repeat {
                skipWhitespace()
                guard next == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                var unused = false
                try skipString(hasEscapes: &unused)
                try expect(UInt8(ascii: ":"), "':'")
                try skipValue(depth: depth + 1)
            } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"), "',' or '}'")
        case UInt8(ascii: "["):
            position += 1
            if consume(UInt8(ascii: "]")) { return }
            repeat {
                try skipValue(depth: depth + 1)
            } while consume(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"), "',' or ']'")
        case UInt8(ascii: "\""):
            var unused = false
            try skipString(hasEscapes: &unused)
        case UInt8(ascii: "t"): try skipLiteral("true")
        case UInt8(ascii: "f"): try skipLiteral("false")
        case UInt8(ascii: "n"): try skipLiteral("null")
        default: try skipNumber()
        }
    }

    private mutating func skipLiteral(_ literal: String) throws(JSONText.Invalid) {
        let count = literal.utf8.count
        guard position + count <= bytes.count, bytes[position..<position + count].elementsEqual(literal.utf8) else {
            throw fail("invalid literal")
        }
        position += count
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private mutating func skipNumber() throws(JSONText.Invalid) {
        if next == UInt8(ascii: "-") { position += 1 }
        guard let first = next, Self.isDigit(first) else { throw fail("expected a value") }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if next == UInt8(ascii: ".") {
            position += 1
            guard let digit = next, Self.isDigit(digit) else { throw fail("expected a digit after '.'") }
            skipDigits()
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            position += 1
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { position += 1 }
            guard let digit = next, Self.isDigit(digit) else { throw fail("expected a digit in the exponent") }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while let byte = next, Self.isDigit(byte) { position += 1 }
    }

    /// Skips a string (cursor on its opening quote), checking escapes, control characters and
    /// UTF-8 sequences.
    private mutating func skipString(hasEscapes: inout Bool) throws(JSONText.Invalid) {
        position += 1
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return
            case UInt8(ascii: "\\"):
                hasEscapes = true
                guard position + 1 < bytes.count else { throw fail("unterminated string") }
                switch bytes[position + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 2
                case UInt8(ascii: "u"):
                    guard position + 6 <= bytes.count, (2..<6).allSatisfy({ Self.hexValue(bytes[position + $0]) != nil }) else {
                        throw fail("invalid \\u escape")
                    }
                    position += 6
                default:
                    throw fail("invalid escape in a string")
                }
            case 0..<0x20:
                throw fail("control character in a string")
            case 0x80...:
                try skipUTF8Sequence()
            default:
                position += 1
            }
        }
        throw fail("unterminated string")
    }

    /// One multi-byte UTF-8 sequence (no overlong forms, no surrogates, at most U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONText.Invalid) {
        let lead = bytes[position]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw fail("invalid UTF-8")
        }
        guard position + length <= bytes.count, (low...high).contains(bytes[position + 1]),
              (2..<length).allSatisfy({ (0x80...0xBF).contains(bytes[position + $0]) })
        else { throw fail("invalid UTF-8") }
        position += length
    }

    /// An error at the cursor.
    func fail(_ reason: String) -> JSONText.Invalid {
        JSONText.Invalid(reason: "\(reason) at byte \(position + 1)")
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// Decodes the escapes of a scanned (so well-formed) string body; a lone surrogate becomes
    /// U+FFFD, as JSON decoders commonly do.
    private static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var index = 0
        func flush() {
            if !utf8.isEmpty { scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars); utf8.removeAll() }
        }
        func hex4(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 4 | hexValue(raw[at + $1])! } }
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                flush()
                var code = hex4(index)
                index += 4
                if (0xD800..<0xDC00).contains(code), index + 6 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u") {
                    let low = hex4(index + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    }
                }
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default: utf8.append(escape)  // \" \\ \/
            }
        }
        flush()
        return String(scalars)
    }
}
