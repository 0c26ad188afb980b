import ArgumentParser

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
        version: "replica-node 0.15.0",
        subcommands: [
            Serve.self, Get.self, SetCommand.self, Delete.self, Keys.self, Import.self,
            Incr.self, CounterCommand.self, Drinks.self,
            Status.self, Peers.self, Health.self, Watch.self, Leave.self, Forget.self, Cluster.self, Keygen.self,
        ])

    /// Parses, validates and runs the command. Unlike ArgumentParser's own `main`, a usage error
    /// is one line on stderr (`replica-node: ...`, exit 64) rather than the message and the
    /// whole usage text: scripts read one line, and `--help` is there for the rest.
    static func main() async {
        do {
            var command = try parseAsRoot(Serve.expandingDiscoverValue(Array(CommandLine.arguments.dropFirst())))
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // --help, --version and the like print what they print, with exit 0.
            if code == .success { exit(withError: error) }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? ""
            if !message.isEmpty { Output.error(message) }
            Glibc.exit(code.rawValue)
        }
    }
}
