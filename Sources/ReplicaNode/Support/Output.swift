import Foundation
import Synchronization
import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// A JSON object written field by field, so that a stored JSON value can be embedded as JSON
/// (`JSONEncoder` can only embed it as a string holding JSON text) and one object per line is
/// cheap to make (`watch --json`).
struct JSONObjectWriter {
    private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]

    private mutating func name(_ name: String) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        Self.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func field(_ key: String, _ value: String) {
        name(key)
        Self.appendString(value, to: &bytes)
    }

    mutating func field(_ key: String, _ value: some BinaryInteger) {
        name(key)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func field(_ key: String, _ value: Double) {
        name(key)
        bytes.append(contentsOf: (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)).utf8)
    }

    mutating func field(_ key: String, _ value: Bool) {
        name(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// `json` must be one well-formed JSON value (it is copied as is).
    mutating func field(_ key: String, json: some Sequence<UInt8>) {
        name(key)
        bytes.append(contentsOf: json)
    }

    /// The object, closed.
    var closed: [UInt8] { bytes + [UInt8(ascii: "}")] }

    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Times as people read them: ISO 8601 in UTC, to the millisecond (what Replica stores).
enum TimeText {
    /// `2026-11-22T14:13:04.545Z` for milliseconds since 1970 (civil-from-days, no calendar
    /// or locale machinery on the client's path).
    static func iso8601(millis: Int64) -> String {
        let days = millis >= 0 ? millis / 86_400_000 : (millis - 86_399_999) / 86_400_000
        let msOfDay = millis - days * 86_400_000
        // Howard Hinnant's days -> (year, month, day).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(msOfDay / 3_600_000, 2)):\(pad(msOfDay / 60_000 % 60, 2))"
            + ":\(pad(msOfDay / 1000 % 60, 2)).\(pad(msOfDay % 1000, 3))Z"
    }

    static func iso8601(_ date: Date) -> String {
        iso8601(millis: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    /// The wall-clock time of a hybrid-logical-clock reading as status prints it
    /// (`wallMillis.logical`).
    static func iso8601(hybridTimestamp text: String) -> String? {
        Int64(text.split(separator: ".").first ?? "").map { iso8601(millis: $0) }
    }

    /// `0.3 s`, `12 s`, `4 min 5 s`, `3 h 2 min`, `2 d 4 h`.
    static func duration(seconds: Double) -> String {
        if seconds < 10 { return oneDecimal(seconds) + " s" }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        if whole < 86_400 { return "\(whole / 3600) h \(whole / 60 % 60) min" }
        return "\(whole / 86_400) d \(whole / 3600 % 24) h"
    }

    /// A signed clock offset: `+3 ms`, `-1.5 s`.
    static func offset(seconds: Double) -> String {
        let sign = seconds < 0 ? "-" : "+"
        let magnitude = abs(seconds)
        return magnitude < 1 ? "\(sign)\(Int((magnitude * 1000).rounded())) ms" : sign + duration(seconds: magnitude)
    }

    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int64((abs(value) * 10).rounded())
        return (value < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}

/// Standard output and error, written as the client commands need.
enum Output {
    static func line(_ text: String) { StandardOutput.write(text + "\n") }

    /// Text as it is (it ends its lines itself).
    static func text(_ text: String) { StandardOutput.write(text) }

    /// One JSON value, as bytes, and a newline.
    static func json(_ bytes: [UInt8]) {
        line(String(decoding: bytes, as: UTF8.self))
    }

    /// An `Encodable` as compact JSON with sorted keys and ISO 8601 dates (status, counters,
    /// drinks: values with no stored JSON inside).
    static func json<Value: Encodable>(encoding value: Value) throws {
        json(try encoded(value))
    }

    /// What `json(encoding:)` prints: dates as ISO 8601 in UTC to the millisecond, as in text
    /// (`2026-11-23T09:36:06.123Z`; `.iso8601` would drop the milliseconds).
    static func encoded<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(TimeText.iso8601(date))
        }
        return Array(try encoder.encode(value))
    }

    /// Pushes what is buffered to its reader (a pipe reader waits for whole lines).
    static func flush() {
        StandardOutput.flush()
        fflush(nil)
    }

    /// The exit status of a command that succeeded, once its output is written: 1, with one
    /// line on stderr, if standard output could not take all of it (a full disk, a closed
    /// descriptor). A `get ... > /dev/full` exited 0 with nothing written, and an
    /// export script kept an empty file. (A closed pipe ends the command by SIGPIPE first, as
    /// for any Unix tool.)
    ///
    /// A command whose change the node applied exits 0 even then, with a warning: its output is
    /// a report, and a script that repeats a failed `incr` would count it twice.
    static func finishedStatus() -> Int32 {
        let failure = StandardOutput.flush()
        let stdio = fflush(nil) == 0 ? nil : errno
        guard let error = failure ?? stdio else { return 0 }
        let failed = OutputFailed(reason: FileSystemReason.systemMessage(error)).description
        if appliedChange.withLock({ $0 }) {
            warning("the change was applied, but its report could not be written: \(failed)")
            return 0
        }
        Output.error(failed)
        return 1
    }

    /// Whether the node answered a change this command asked for (it was applied).
    private static let appliedChange = Mutex(false)

    /// The node answered a change: see `finishedStatus`.
    /// A pipe whose reader has gone then fails the write (EPIPE) instead of killing the process
    /// by SIGPIPE, so that the warning, and exit 0, still come.
    static func changeWasApplied() {
        appliedChange.withLock { applied in
            if !applied { signal(SIGPIPE, SIG_IGN) }
            applied = true
        }
    }

    /// Standard output could not take what was written to it (a full disk, a closed
    /// descriptor): a command printing a long listing stops at once, rather than read every
    /// page of it for nobody.
    struct OutputFailed: Error, CustomStringConvertible {
        var reason: String
        var description: String { "cannot write standard output: \(reason)" }
    }

    /// Writes out what is buffered, and throws `OutputFailed` if any write failed so far.
    static func checkWritten() throws(OutputFailed) {
        if let error = StandardOutput.flush() { throw OutputFailed(reason: FileSystemReason.systemMessage(error)) }
    }

    /// `replica-node: message` on stderr: the one line of a failed command.
    static func error(_ message: String) {
        toStandardError("replica-node: \(message)\n")
    }

    /// `warning: message` on stderr: something the command could not show (an entry it cannot
    /// read), while it still succeeds.
    static func warning(_ message: String) {
        toStandardError("warning: \(message)\n")
    }

    /// A line on stderr (progress, banners) that is not an error.
    static func note(_ message: String) {
        toStandardError(message + "\n")
    }

    /// Writes `text` to stderr at once (stderr is not buffered), after what is buffered for
    /// stdout, so that both read in order on a terminal.
    static func toStandardError(_ text: String) {
        StandardOutput.flush()
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
