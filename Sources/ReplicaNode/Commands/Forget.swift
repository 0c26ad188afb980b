import ArgumentParser
import ReplicaCore

struct Forget: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Remove a dead member from the whole cluster.",
        discussion: """
            Run it on any member: the cluster stops dialling ID and lists it no more. Refused \
            for a member that is alive (stop it, or run `leave` on it) and for the node itself. \
            If the forgotten node starts again later, it rejoins as a new life.

            Example:
              replica-node forget node3 --data cluster-data/node1
            """)

    @Argument(help: "The id of the member to remove.") var id: String
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard NodeID.isValid(id) else { throw ValidationError("Invalid node id '\(id)'.") }
    }

    func perform(with client: ControlClient) throws {
        let node = try client.call(.forget(node: id), expecting: \.forgotten)
        if options.json { try Output.json(encoding: ["forgotten": node]) } else { Output.line("OK forgot \(node)") }
    }
}
