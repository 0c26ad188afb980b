import ArgumentParser
import ReplicaCore

struct Keys: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List the keys that hold a value.",
        discussion: """
            Counter slots and drink-log elements are stored under keys starting with the reserved \
            character U+001F; they are hidden unless --all is given, which shows U+001F as ␟ \
            in text (--json keeps the key exact, as \\u001f); use `counter` and `drinks list` \
            to read them.

            Examples:
              replica-node keys --data cluster-data/node1
              replica-node keys --prefix config. --data cluster-data/node1
            """)

    @Option(help: "Only keys starting with this prefix.") var prefix = ""
    @Flag(help: "Also list the keys of counters and logs (shown with a leading ␟).") var all = false
    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        var keys = try client.call(.keys(prefix: prefix), expecting: \.keys)
        if !all { keys = keys.filter { !FamilyKey.isReserved($0) } }
        // JSON keeps each key exact (a program may pass it back); text shows U+001F as ␟.
        if options.json { try Output.json(encoding: keys) } else { keys.map { TextLine.visible(FamilyKey.readable($0)) }.forEach(Output.line) }
    }
}
