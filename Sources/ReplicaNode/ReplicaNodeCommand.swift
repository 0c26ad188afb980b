import ArgumentParser
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `replica-node`: serve a Replica node, or inspect and change a running one.
@main
struct ReplicaNodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica-node",
        abstract: "Serve a Replica node, or inspect and change a running one.",
        discussion: """
            A node keeps shared keys identical across machines: every write is stamped with a \
            hybrid-logical-clock version, committed to SQLite, and published to peers over \
            ZeroMQ; the highest version wins everywhere.

            Client commands find their node through the control socket in its data directory \
            (--data DIR or $REPLICA_DATA). The examples in every command's help talk to the \
            nodes of a local cluster started in the current directory (data in ./cluster-data):

            Examples:
              replica-node set greeting '"hello"' --data cluster-data/node1
              replica-node get greeting --data cluster-data/node3
              replica-node status --data cluster-data/node3
            """,
        version: "replica-node 0.34.0",
        subcommands: [
            Serve.self, Get.self, SetCommand.self, Delete.self, Keys.self, Export.self, Import.self,
            Incr.self, CounterCommand.self, Drinks.self,
            Status.self, Peers.self, Health.self, Watch.self, Leave.self, Forget.self, Cluster.self, Keygen.self,
        ])

    /// Parses, validates and runs the command. Unlike ArgumentParser's own `main`, a usage error
    /// is one line on stderr (`replica-node: ...`, exit 64) rather than the message and the
    /// whole usage text: scripts read one line, and `--help` is there for the rest.
    ///
    /// Synchronous, so that `serve` and `cluster` install their signal handlers before anything
    /// else: Swift's async `main` starts with `dispatch_main()`, whose main thread waits in
    /// `sigsuspend` with every signal unblocked, and a SIGTERM sent at once to a process that
    /// inherited a blocked mask (children of Dispatch threads) would be acted on there with
    /// the default action, killing it (status 143) before any of its code ran.
    static func main() {
        _ = StandardStreams.inputWasClosed  // before any other thread opens a file
        let command: any ParsableCommand
        do {
            command = try parseAsRoot(Serve.expandingDiscoverValue(Array(CommandLine.arguments.dropFirst())))
        } catch {
            fail(error)
        }
        switch command {
        case is Serve: SignalWaiter.install(SignalWaiter.termination)
        case is Cluster: SignalWaiter.install(Cluster.signals)
        case is Import: SignalWaiter.install(SignalWaiter.termination)  // stops sending, reports what was written
        default: break
        }
        let parsed = ParsedCommand(command: command)
        Task {
            do {
                var command = parsed.command
                if var asynchronous = command as? any AsyncParsableCommand {
                    try await asynchronous.run()
                } else {
                    try command.run()
                }
            } catch {
                fail(error)
            }
            Glibc.exit(Output.finishedStatus())
        }
        dispatchMain()
    }

    /// Exits as ArgumentParser would for `error`, with its message on one line.
    static func fail(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        // --help, --version and the like print what they print, with exit 0.
        if code == .success { exit(withError: error) }
        let message = message(for: error).split(separator: "\n").first.map(String.init) ?? ""
        if !message.isEmpty { Output.error(message) }
        Output.flush()
        Glibc.exit(code.rawValue)
    }
}

/// A parsed command handed to the task that runs it (it is used by that task alone).
private struct ParsedCommand: @unchecked Sendable {
    var command: any ParsableCommand
}
