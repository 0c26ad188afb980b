import ArgumentParser
import ReplicaCore

struct Export: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print every register as JSON Lines, as `import` reads them.",
        discussion: """
            One line per key that holds a value, in key byte order, as `get --json` prints it: \
            {"key", "value", "encoding", "version", "time", "hlc", "node", "schema"}. `import` \
            of the output writes each register back with its value and schema (as new writes: \
            the version fields are not imported). Counters and drink logs are not exported: \
            their keys are reserved, and they come back from members or with the data \
            directory (docs/operations.md, "Backups and restoring a node"). Read a page at a \
            time while the node runs: a key that holds a value for the whole export is printed \
            exactly once; one written or removed meanwhile may or may not be. On a terminal, \
            progress is shown on stderr. Exits 1 if the node cannot be read to the end or the \
            output cannot be written (a full disk): then the output is not complete. (The \
            output is JSON Lines with or without --json.)

            Examples:
              replica-node export --data cluster-data/node1 > registers.jsonl
              replica-node import registers.jsonl --data cluster-data/node2
              replica-node export config. --data cluster-data/node1
            """)

    @Argument(help: "Only keys starting with this.") var prefix = ""
    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        var client = client
        // Pages are read one at a time for all clients: under many exports at once a page
        // waits its turn (12 of 50 concurrent exports timed out at 5 s).
        client.timeout = .seconds(30)
        var progress = KeyProgress(verb: "exported")
        var exported = 0
        do {
            try client.forEachPage({ .exportPage(prefix: prefix, after: $0) }, expecting: \.entriesPage) { page in
                for entry in page { Output.json(EntryOutput.json(entry)) }
                try Output.checkWritten()
                exported += page.count
                progress.show(exported)
            }
        } catch is ControlClient.OlderNode {
            throw ControlClient.Unreachable(
                message: "the node serving \(client.dataDirectory.path) runs a replica-node older than 0.28.0, which cannot export: "
                    + "upgrade it, or export with `keys` and `get --json` (docs/operations.md)")
        }
        progress.finish(exported)
    }
}
