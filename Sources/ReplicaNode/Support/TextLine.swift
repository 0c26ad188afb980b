/// Text output is one line per item (`keys`, `watch`, `drinks list`), read by people and by
/// `grep` or `wc -l`. A key, drink name or log id may hold any character, a newline included,
/// which would split its line in two: such characters are shown escaped. `--json` gives the
/// exact text.
enum TextLine {
    /// `text` with every control character (U+0000-U+001F, U+007F-U+009F) shown as `\n`, `\r`,
    /// `\t` or `\u{XX}`; a backslash stays a backslash (the line is for reading, not parsing).
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": shown += "\\n"
            case "\r": shown += "\\r"
            case "\t": shown += "\\t"
            case _ where isControl(scalar): shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// A stored JSON value on one line: outside its strings (which cannot hold a raw control
    /// character), a newline, return or tab is only whitespace, so each becomes a space.
    /// U+2028 and U+2029, which JSON strings may hold raw, become their JSON escapes.
    static func oneLine(json text: String) -> String {
        guard text.unicodeScalars.contains(where: { [0x0A, 0x0D, 0x09, 0x2028, 0x2029].contains($0.value) }) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x0D, 0x09: shown += " "
            case 0x2028: shown += "\\u2028"
            case 0x2029: shown += "\\u2029"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// C0, DEL and C1 controls, and the line and paragraph separators (U+2028, U+2029), which
    /// line-splitting readers (Python's `splitlines`, editors) also break at.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
