import ArgumentParser
import ReplicaCore

struct Get: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value of a key.",
        discussion: """
            Prints the value as JSON (other bytes, written by a program with its own codec, as \
            base64:...). With --json, one object: {"key", "value", "encoding", "version", \
            "time", "hlc", "node", "schema"}, where value is the JSON value itself when \
            encoding is "json" and a base64 string when it is "base64", and time is when the \
            version was written. hlc is the version's 64-bit clock as an integer, beyond what \
            readers that parse numbers as doubles (JavaScript, jq) hold exactly: compare \
            version, a string, there. An unknown key exits with 1; a key no node can hold (empty, over \
            \(ControlEndpoint.replicaLimits.maxKeyBytes) bytes) with 64.

            Examples:
              replica-node get greeting --data cluster-data/node1
              replica-node get greeting --json --data cluster-data/node1
            """)

    @Argument(help: "The key to read.") var key: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        try ClientChecks.validate(key: key, writable: false)
    }

    func perform(with client: ControlClient) throws {
        let entry = try client.call(.get(key: key), expecting: \.entry)
        if options.json {
            Output.json(EntryOutput.json(entry))
        } else {
            Output.line(entry.payload.map(EntryOutput.text) ?? "null")
        }
    }
}
