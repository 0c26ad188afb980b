import ArgumentParser

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the value of a key.",
        discussion: """
            Prints the value as JSON; with --json, an object with the key, value, version, \
            hybrid-logical-clock timestamp and writing node. An unknown key exits with 1.

            Example: replica-node get greeting --data /tmp/n1
            """)

    @Argument(help: "The key to read.") var key: String
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let reply = try options.client().call(ControlRequest(command: .get, key: key))
            guard let entry = reply.entry else { return }
            if options.json { try printJSON(entry) } else { print(entry.value ?? "null") }
        }
    }
}
