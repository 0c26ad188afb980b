import ArgumentParser
import Foundation
import ReplicaCore

struct Set: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a JSON value to a key, replicated to every peer.",
        discussion: """
            The value must be valid JSON: quote strings ('"hello"'), numbers and objects as is. \
            Returns once the write is committed to the node's database; peers receive it at once \
            or through anti-entropy.

            Example: replica-node set config.theme '{"dark":true}' --data /tmp/n1
            """)

    @Argument(help: "The key to write.") var key: String
    @Argument(help: "The value, as JSON.") var value: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard !FamilyKey.isReserved(key) else {
            throw ValidationError("keys starting with U+001F are reserved for counters and logs")
        }
        guard (try? JSONSerialization.jsonObject(with: Data(value.utf8), options: .fragmentsAllowed)) != nil else {
            throw ValidationError("invalid JSON value: \(value) (strings need quotes: '\"text\"')")
        }
    }

    func run() throws {
        try reportingErrors {
            let reply = try options.client().call(ControlRequest(command: .set, key: key, value: value))
            guard let entry = reply.entry else { return }
            if options.json { try printJSON(entry) } else { print("OK \(entry.version)") }
        }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a key everywhere (writes a tombstone).",
        discussion: "Example: replica-node delete greeting --data /tmp/n1")

    @Argument(help: "The key to remove.") var key: String
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let reply = try options.client().call(ControlRequest(command: .delete, key: key))
            guard let entry = reply.entry else { return }
            if options.json { try printJSON(entry) } else { print("OK \(entry.version)") }
        }
    }
}
