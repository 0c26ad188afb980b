import ArgumentParser
import ReplicaCore

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the keys that hold a value.",
        discussion: """
            Counter slots and drink-log elements are stored under keys starting with the reserved \
            character U+001F; they are hidden unless --all is given, which shows U+001F as ␟ \
            (use `counter` and `drinks list` to read them).

            Example: replica-node keys --prefix config. --data /tmp/n1
            """)

    @Option(help: "Only keys starting with this prefix.") var prefix = ""
    @Flag(help: "Also list the keys of counters and logs (shown with a leading ␟).") var all = false
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            var keys = try options.client().call(ControlRequest(command: .keys, prefix: prefix)).keys ?? []
            keys = all ? keys.map(FamilyKey.readable) : keys.filter { !FamilyKey.isReserved($0) }
            if options.json { try printJSON(keys) } else { keys.forEach { print($0) } }
        }
    }
}
