import ArgumentParser

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

            Client commands find their node through the control socket in its data directory:
              replica-node serve --id node1 --listen 127.0.0.1:7001 --peer 127.0.0.1:7003 --data /tmp/n1
              replica-node set greeting '"hello"' --data /tmp/n1
              replica-node get greeting --data /tmp/n2
            """,
        subcommands: [
            Serve.self, Get.self, Set.self, Delete.self, Keys.self, Status.self, Peers.self, Watch.self, Import.self,
            Incr.self, CounterCommand.self, Drinks.self, Cluster.self, Keygen.self,
        ])
}
