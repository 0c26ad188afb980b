import Foundation
import ReplicaCore
@testable import ReplicaNode
import Testing

/// Text output keeps one item per line whatever a key, name or value holds: a newline in a key
/// split a `watch` line in two (helper-58).
struct TextLineTests {
    @Test(arguments: [
        ("plain", "plain"),
        ("two\nlines", "two\\nlines"),
        ("tab\there\r", "tab\\there\\r"),
        ("bell\u{7}del\u{7F}c1\u{85}", "bell\\u{7}del\\u{7F}c1\\u{85}"),
        ("line\u{2028}para\u{2029}", "line\\u{2028}para\\u{2029}"),
        ("back\\slash é ☕️", "back\\slash é ☕️"),
    ])
    func controlCharactersAreShownEscaped(text: String, shown: String) {
        #expect(TextLine.visible(text) == shown)
    }

    @Test func aJSONValueIsShownOnOneLine() {
        #expect(TextLine.oneLine(json: "{\n  \"a\": [1,\r\n\t2]\n}") == "{   \"a\": [1,   2] }")
        #expect(TextLine.oneLine(json: "\"keeps \\n escaped\"") == "\"keeps \\n escaped\"")
        #expect(TextLine.oneLine(json: "\"a\u{2028}b\u{2029}\"") == "\"a\\u2028b\\u2029\"", "JSON's own escapes")
    }

    @Test func aWatchLineIsOneLine() {
        let version = Version(timestamp: HybridTimestamp(wallMillis: 1_795_374_264_545, logical: 0), node: "n2")
        let changes = [
            WatchedChange(subject: .register(key: "a\nb", value: Data("{\n\"x\": 1\n}".utf8)), version: version, deliveredBy: "n2"),
            WatchedChange(subject: .register(key: "a\nb", value: nil), version: version, deliveredBy: nil),
            WatchedChange(subject: .counter(name: "vis\nits", delta: 1, total: 2), version: version, deliveredBy: nil),
            WatchedChange(subject: .log(name: "l\n", id: "i\nd", action: .added, element: Data("1".utf8), drink: nil), version: version, deliveredBy: nil),
        ]
        let lines = changes.map(ChangeOutput.text)
        for line in lines { #expect(!line.contains("\n"), "\(line)") }
        #expect(lines[0].contains("a\\nb = { \"x\": 1 }"))
        #expect(lines[3].contains("l\\n: added i\\nd = 1"))
    }
}
