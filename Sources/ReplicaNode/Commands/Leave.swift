import ArgumentParser

struct Leave: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Take a node out of the cluster for good, then stop it.",
        discussion: """
            The node announces its departure, waits (at most 2 s) until every alive member has \
            acknowledged it, and stops; every member then lists it as left and no longer dials \
            it. Started again later, with the same id, it joins as a new life. To remove a node \
            that is already dead, run `forget` on any member instead.

            Example:
              replica-node leave --data cluster-data/node3
            """)

    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        var client = client
        client.timeout = .seconds(10)
        let acknowledged = try client.call(.leave, expecting: \.left)
        if options.json {
            try Output.json(encoding: Departure(left: true, acknowledged: acknowledged))
        } else {
            Output.line("OK left the cluster; \(acknowledged) member(s) acknowledged; the node stops")
        }
    }

    struct Departure: Encodable {
        var left: Bool
        var acknowledged: Int
    }
}
