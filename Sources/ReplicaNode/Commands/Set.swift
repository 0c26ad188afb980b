import ArgumentParser
import ReplicaCore

/// `set` (named so as not to shadow `Swift.Set`).
struct SetCommand: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Write a JSON value to a key, replicated to every peer.",
        discussion: """
            The value must be valid JSON: quote strings ('"hello"'), numbers and objects as is; \
            it is stored without insignificant whitespace. Returns once the write is committed \
            to the node's database (printing its version and when it was written); peers \
            receive it at once or through anti-entropy. With --json, the entry as `get --json` \
            prints it.

            Examples:
              replica-node set greeting '"hello"' --data cluster-data/node1
              replica-node set config.theme '{"dark": true}' --data cluster-data/node1
            """)

    @Argument(help: "The key to write.") var key: String
    @Argument(help: "The value, as JSON.") var value: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard !FamilyKey.isReserved(key) else { throw ValidationError(ReservedKey.message) }
        guard JSONText.isValid(Array(value.utf8)) else {
            throw ValidationError("invalid JSON value: \(value) (strings need quotes: '\"text\"')")
        }
    }

    func perform(with client: ControlClient) throws {
        let entry = try client.call(.set(key: key, json: value), expecting: \.entry)
        if options.json { Output.json(EntryOutput.json(entry)) } else { Output.line("OK \(EntryOutput.versionText(entry.version))") }
    }
}
