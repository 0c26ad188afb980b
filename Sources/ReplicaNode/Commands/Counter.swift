import ArgumentParser
import ReplicaCore

struct Incr: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "incr",
        abstract: "Add to a counter and print its new value.",
        discussion: """
            Counters never lose an increment: each node adds to its own slot and the value is \
            the sum of all slots, so increments made at the same time on different nodes (or on \
            both sides of a partition) all count. --by may be negative. Prints the counter's \
            value on this node once the increment is committed; with --json, the value and slots. \
            A name longer than \(ClientChecks.longestCounterName) bytes (the key limit, \
            \(ControlEndpoint.replicaLimits.maxKeyBytes) bytes, less the \(FamilyKey.counterSlotOverhead) \
            its slots' keys add) is a usage error (exit 64).

            Examples:
              replica-node incr visits --data cluster-data/node1
              replica-node incr visits --by 5 --data cluster-data/node2
            """)

    @Argument(help: "The counter's name.") var name: String
    @Option(parsing: .unconditional, help: "The amount to add (negative to subtract).") var by = 1
    @OptionGroup var options: ClientOptions

    func validate() throws {
        try ClientChecks.validate(counterName: name)
    }

    func perform(with client: ControlClient) throws {
        CounterCommand.print(try client.call(.incr(name: name, by: by), expecting: \.counter), json: options.json)
    }
}

struct CounterCommand: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "counter",
        abstract: "Print a counter's value.",
        discussion: """
            Prints the sum of every node's slot as this node has them (0 for a counter never \
            incremented). A slot this version cannot read (a newer version's, or damaged) is \
            left out of the sum, with a "warning:" line on stderr naming it; the exit code stays 0. \
            With --json: {"name", "value", "slots": [{"incarnation", "node", "total"}], \
            "problems"}, the slots left out in "problems".

            Example:
              replica-node counter visits --data cluster-data/node3
            """)

    @Argument(help: "The counter's name.") var name: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        try ClientChecks.validate(counterName: name)
    }

    func perform(with client: ControlClient) throws {
        Self.print(try client.call(.counter(name: name), expecting: \.counter), json: options.json)
    }

    /// The value on stdout (with --json, the snapshot, its `problems` included); in text, one
    /// "warning:" line on stderr per slot left out of the sum.
    static func print(_ counter: CounterSnapshot, json: Bool) {
        if json {
            try? Output.json(encoding: counter)
        } else {
            Output.line(String(counter.value))
            for problem in counter.problems { Output.warning(problem) }
        }
    }
}
