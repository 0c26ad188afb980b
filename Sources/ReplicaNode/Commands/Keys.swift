import ArgumentParser

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the keys that hold a value.",
        discussion: "Example: replica-node keys --prefix config. --data /tmp/n1")

    @Option(help: "Only keys starting with this prefix.") var prefix = ""
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let keys = try options.client().call(ControlRequest(command: .keys, prefix: prefix)).keys ?? []
            if options.json { try printJSON(keys) } else { keys.forEach { print($0) } }
        }
    }
}
