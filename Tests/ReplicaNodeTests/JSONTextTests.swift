import Foundation
@testable import ReplicaNode
import Testing

/// The byte-level JSON checks behind `set`, `import` and `get --json`.
struct JSONTextTests {
    @Test(arguments: [
        "0", "-0", "1.5e10", "-12.25E-3", "12345678901234567890123", "true", "false", "null", #""""#,
        #""a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00""#, "\"é😀\"", "[]", "{}", " [1, [2, [3]]] ",
        #"{"a": {"b": [true, null, "x"]}, "c": -1}"#, "\t\n{\"k\":1}\r\n",
    ])
    func accepts(_ text: String) {
        #expect(JSONText.isValid(Array(text.utf8)), "\(text)")
    }

    @Test(arguments: [
        "", " ", "01", "1.", ".5", "-", "1e", "+1", "NaN", "tru", "nul", "[1,]", "[1 2]", "{\"a\" 1}", "{\"a\":}",
        "{a:1}", "{\"a\":1,}", "\"abc", "\"a\u{01}b\"", #""\x""#, #""\u12G4""#, "1 2", "[", "]", "{}}", "'x'",
    ])
    func rejects(_ text: String) {
        #expect(!JSONText.isValid(Array(text.utf8)), "\(text)")
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() {
        #expect(!JSONText.isValid([0x22, 0xC3, 0x22]), "truncated sequence")
        #expect(!JSONText.isValid([0x22, 0xC0, 0xAF, 0x22]), "overlong")
        #expect(!JSONText.isValid([0x22, 0xED, 0xA0, 0x80, 0x22]), "surrogate")
        #expect(!JSONText.isValid([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]), "above U+10FFFF")
        #expect(JSONText.isValid(Array(String(repeating: "[", count: 500).utf8) + Array(String(repeating: "]", count: 500).utf8)))
        #expect(!JSONText.isValid(Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8)))
    }

    @Test func minifyingDropsOnlyInsignificantWhitespace() {
        #expect(JSONText.minified(Array(#" { "a b" : [ 1 , "c d\" e" ] } "#.utf8)).map { String(decoding: $0, as: UTF8.self) } == #"{"a b":[1,"c d\" e"]}"#)
        #expect(JSONText.minified(Array("[1,".utf8)) == nil)
    }

    @Test func jsonLinesGivesKeysValuesAndLineNumbers() throws {
        let text = "{\"key\":\"a\\u0041\",\"value\":{ \"x\" : 1 }}\r\n\n  \n{\"other\":[1],\"value\":2,\"key\":\"b\"}"
        var items: [(String, String)] = []
        try Array(text.utf8).withUnsafeBufferPointer { buffer in
            try JSONLines.forEachItem(in: buffer) { item, line in
                items.append((item.key, String(decoding: JSONScanner(line).minified(item.value), as: UTF8.self)))
            }
        }
        #expect(items.map(\.0) == ["aA", "b"])
        #expect(items.map(\.1) == ["{\"x\":1}", "2"])
        #expect(throws: JSONLines.BadLine(line: 3, reason: "missing \"value\"")) {
            try Array("{\"key\":\"a\",\"value\":1}\n\n{\"key\":\"b\"}".utf8).withUnsafeBufferPointer { buffer in
                try JSONLines.forEachItem(in: buffer) { _, _ in }
            }
        }
    }

    @Test func timesAreISO8601UTCToTheMillisecond() {
        #expect(TimeText.iso8601(millis: 0) == "1970-01-01T00:00:00.000Z")
        #expect(TimeText.iso8601(millis: 1_714_552_200_250) == "2024-05-01T08:30:00.250Z")
        #expect(TimeText.iso8601(millis: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(TimeText.iso8601(millis: -1) == "1969-12-31T23:59:59.999Z")
        #expect(TimeText.iso8601(Date(timeIntervalSince1970: 1_714_552_200.2504)) == "2024-05-01T08:30:00.250Z")
        #expect(TimeText.duration(seconds: 0.34) == "0.3 s")
        #expect(TimeText.duration(seconds: 245) == "4 min 5 s")
        #expect(TimeText.offset(seconds: -0.0123) == "-12 ms")
        #expect(TimeText.offset(seconds: 2.5) == "+2.5 s")
    }
}

/// What `set` says about a value that is not JSON: a bare word gets the quoting hint, an empty
/// or broken value does not (the hint misled: the value was cut short, not unquoted).
@Suite struct InvalidValueMessageTests {
    private func message(_ text: String) -> String {
        do {
            _ = try ClientChecks.validatedValue(Array(text.utf8), from: "")
            return ""
        } catch {
            return error.message
        }
    }

    @Test func aBareWordGetsTheQuotingHint() {
        #expect(message("hello") == "invalid JSON value: hello (strings need quotes: '\"text\"')")
    }

    @Test func anEmptyValueSaysSo() {
        #expect(message("") == "no JSON value: it is empty")
        #expect(message("  \n") == "no JSON value: it is empty")
    }

    @Test func aValueCutShortGetsNoHint() {
        #expect(message("{\"a\": [1,") == "invalid JSON value: {\"a\": [1,")
    }

    /// The legacy `keys` reply's size guard counts each key as `JSONEncoder` writes it.
    @Test func encodedLengthIsWhatJSONEncoderWrites() throws {
        for key in ["plain", "\u{1F}counter/visits/1", "a\"b\\c/d\ne\tf\u{01}g", "caf\u{E9} \u{1F600}", ""] {
            #expect(JSONText.encodedLength(ofString: key) == (try JSONEncoder().encode(key)).count, "\(key.debugDescription)")
        }
    }
}
