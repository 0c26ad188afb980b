import Foundation
import ReplicaCore

/// How the client commands show stored values and versions, in text and in JSON.
///
/// A payload that is JSON (everything `set`, `import` and the library's JSON codec write) is
/// shown as JSON; other bytes (a library user's own codec) as base64, marked as such, so that
/// nothing is shown lossily.
enum EntryOutput {
    /// The payload as text: its JSON, or `base64:...`.
    static func text(_ payload: Data) -> String {
        let bytes = [UInt8](payload)
        return JSONText.isValid(bytes) ? String(decoding: bytes, as: UTF8.self) : "base64:" + payload.base64EncodedString()
    }

    /// `"value": <JSON>, "encoding": "json"`, or `"value": "<base64>", "encoding": "base64"`, or
    /// `"removed": true` for a tombstone.
    ///
    /// Embedded as JSON only when the bytes are JSON with no whitespace outside strings (what
    /// `set`, `import` and the library's JSON codec store): other JSON, pretty-printed by a
    /// program's own codec, travels as base64. Embedded, its newlines split the line (`export`
    /// wrote lines `import` refused), and `import`, which drops such whitespace, would not store
    /// the same bytes.
    static func addValue(_ payload: Data?, named name: String = "value", to object: inout JSONObjectWriter) {
        guard let payload else {
            object.field("removed", true)
            return
        }
        let bytes = [UInt8](payload)
        if JSONText.minified(bytes) == bytes {
            object.field(name, json: bytes)
            object.field("encoding", "json")
        } else {
            object.field(name, payload.base64EncodedString())
            object.field("encoding", "base64")
        }
    }

    /// `"version"`, `"time"` (the version's wall clock), `"hlc"` and `"node"`.
    static func addVersion(_ version: Version, to object: inout JSONObjectWriter) {
        object.field("version", version.description)
        object.field("time", time(of: version))
        object.field("hlc", version.timestamp.rawValue)
        object.field("node", version.node.rawValue)
    }

    /// `get --json`, `set --json`, `delete --json`.
    static func json(_ entry: StoredEntry) -> [UInt8] {
        var object = JSONObjectWriter()
        object.field("key", entry.key)
        addValue(entry.payload, to: &object)
        addVersion(entry.version, to: &object)
        object.field("schema", entry.schema)
        return object.closed
    }

    /// When a version was written, as a time: `2026-11-22T14:13:04.545Z`.
    static func time(of version: Version) -> String {
        TimeText.iso8601(millis: Int64(version.timestamp.wallMillis))
    }

    /// `1795374264545.0@node1 (2026-11-22T14:13:04.545Z)`.
    static func versionText(_ version: Version) -> String {
        "\(version) (\(time(of: version)))"
    }
}
