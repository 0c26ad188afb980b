import ArgumentParser
import ReplicaCore

struct Delete: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove a key everywhere (writes a tombstone).",
        discussion: """
            Prints the version of the removal; an unknown key exits with 1. With --json, the \
            tombstone as `get --json` would print it ("removed": true, no value). Keys starting \
            with U+001F hold counter slots and log elements and are refused (exit 64): use \
            `drinks remove` for a drink; so is a key no node can hold (empty, over \
            \(ControlEndpoint.replicaLimits.maxKeyBytes) bytes).

            Example:
              replica-node delete greeting --data cluster-data/node1
            """)

    @Argument(help: "The key to remove.") var key: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        try ClientChecks.validate(key: key, writable: true)
    }

    func perform(with client: ControlClient) throws {
        let entry = try client.call(.delete(key: key), expecting: \.entry)
        if options.json { Output.json(EntryOutput.json(entry)) } else { Output.line("OK removed at \(EntryOutput.versionText(entry.version))") }
    }
}
