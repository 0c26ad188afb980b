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
        // Printed a page at a time, as it comes: a store of millions of keys is listed without
        // either side holding them all.
        var keys: [String] = []
        do {
            try client.forEachPage({ .keysPage(prefix: prefix, after: $0, all: all) }, expecting: \.keysPage) { page in
                if options.json {
                    keys += page
                } else {
                    page.forEach(printText)
                    try Output.checkWritten()
                }
            }
        } catch is ControlClient.OlderNode {
            // A node before 0.28.0: the whole list in one reply, as it was.
            keys = try client.call(.keys(prefix: prefix), expecting: \.keys)
            if !all { keys = keys.filter { !FamilyKey.isReserved($0) } }
            if !options.json { keys.forEach(printText) }
        }
        // JSON keeps each key exact (a program may pass it back): one array, so it is built
        // whole (--prefix lists a part).
        if options.json { try Output.json(encoding: keys) }
    }

    /// Text shows U+001F as ␟, and control characters escaped.
    private func printText(_ key: String) { Output.line(TextLine.visible(FamilyKey.readable(key))) }
}
