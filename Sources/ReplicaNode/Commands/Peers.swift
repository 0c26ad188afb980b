import ArgumentParser

struct Peers: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List a node's members: id, address, state and since when, last seen, relay, sync, clock.",
        discussion: """
            The peers table of `status` alone (see `status --help`); with --json, an array of \
            the peers as `status --json` has them.

            Examples:
              replica-node peers --data cluster-data/node1
              replica-node peers --json --data cluster-data/node1
            """)

    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        let status = try client.call(.status, expecting: \.status)
        if options.json { try Output.json(encoding: status.peers) } else { Output.text(Status.renderPeers(status.peers)) }
    }
}
