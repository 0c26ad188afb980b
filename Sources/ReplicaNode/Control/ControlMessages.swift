import Foundation
import ReplicaCore

/// A request from a client command to a serving node, sent as JSON over the control socket
/// (`ipc://DATA/control.sock`). See docs/protocol.md, "Control socket".
struct ControlRequest: Codable, Sendable {
    enum Command: String, Codable, Sendable {
        case get, set, delete, keys, status, watch, setMany
        // Counters and drink logs (ControlServer+Counters.swift).
        case incr, counter, drinkAdd, drinkList, drinkRemove
    }

    var command: Command
    var key: String?
    /// For `set`: the value as JSON text.
    var value: String?
    var prefix: String?
    /// For `setMany`: keys and JSON values, written in one group commit.
    var items: [Item]?
    /// For `incr`/`counter`: the counter's name; for `drinkAdd`: the drink's name.
    var name: String?
    /// For `incr`: the amount to add (may be negative).
    var by: Int?
    /// For `drinkAdd`: caffeine in mg and the date (now if absent).
    var mg: Double?
    var date: Date?

    struct Item: Codable, Sendable {
        var key: String
        var value: String
    }
}

/// The reply to a request; `watch` gets one reply per change until the client goes away.
struct ControlReply: Codable, Sendable {
    var error: ControlFailure?
    var entry: EntryView?
    var keys: [String]?
    var status: ReplicaStatus?
    var change: ChangeView?
    /// For `setMany`: how many were written.
    var written: Int?
    /// For `incr` and `counter`.
    var counter: CounterSnapshot?
    /// For `drinkList`; `drinkAdd` and `drinkRemove` return the one drink.
    var drinks: [Drink]?
    var drink: Drink?
}

struct ControlFailure: Codable, Sendable, Error, CustomStringConvertible {
    enum Code: String, Codable, Sendable {
        case unknownKey, invalidRequest, invalidValue, saveFailed, shutDown, internalError, newerSchema
    }

    var code: Code
    var message: String
    var description: String { message }
}

/// An entry as clients see it: the value is JSON text (nil for a tombstone).
struct EntryView: Codable, Sendable {
    var key: String
    var value: String?
    var version: String
    var hlc: UInt64
    var node: String
    var schema: UInt16

    init(_ entry: Entry) {
        key = entry.key
        value = entry.payload.map { String(decoding: $0, as: UTF8.self) }
        version = entry.version.description
        hlc = entry.version.timestamp.rawValue
        node = entry.version.node.rawValue
        schema = entry.schema
    }
}

struct ChangeView: Codable, Sendable {
    var entry: EntryView
    /// "local", or the id of the peer it came from.
    var from: String
}
