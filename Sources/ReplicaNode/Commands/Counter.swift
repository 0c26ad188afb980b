import ArgumentParser

struct Incr: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add to a counter and print its new value.",
        discussion: """
            Counters never lose an increment: each node adds to its own slot and the value is \
            the sum of all slots, so increments made at the same time on different nodes (or on \
            both sides of a partition) all count. --by may be negative. Prints the counter's \
            value on this node once the increment is committed; with --json, the value and slots.

            Example: replica-node incr visits --by 5 --data /tmp/n1
            """)

    @Argument(help: "The counter's name.") var name: String
    @Option(parsing: .unconditional, help: "The amount to add (negative to subtract).") var by = 1
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let reply = try options.client().call(ControlRequest(command: .incr, name: name, by: by))
            guard let counter = reply.counter else { return }
            if options.json { try printJSON(counter) } else { print(counter.value) }
        }
    }
}

struct CounterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "counter",
        abstract: "Print a counter's value.",
        discussion: """
            Prints the sum of every node's slot as this node has them (0 for a counter never \
            incremented). With --json: {"name", "value", "slots": [{"incarnation", "node", \
            "total"}], "problems"}.

            Example: replica-node counter visits --data /tmp/n2
            """)

    @Argument(help: "The counter's name.") var name: String
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let reply = try options.client().call(ControlRequest(command: .counter, name: name))
            guard let counter = reply.counter else { return }
            if options.json { try printJSON(counter) } else { print(counter.value) }
        }
    }
}
