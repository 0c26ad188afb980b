import ArgumentParser
import ReplicaCore

struct Health: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Exit 0 only when the node serves, commits, reads its store, and its clock agrees with its members'.",
        discussion: """
            Otherwise exit 1, with one line per problem on stdout: failing commits (a full disk), \
            a store file that cannot be read (damaged under the running node: restart it), a clock too far from the members' (its writes are refused), another process with \
            this node's id (a copied data directory started twice: writes refused). Other \
            problems are listed as "warning:" lines and do not fail (exit 0): save and load \
            errors (a write refused, a value that cannot be read; see status), a member's clock, \
            a member whose key is not trusted, a node that has heard no member for a while or \
            that no member hears (its writes reach no one). A node that is not running fails \
            too. Made for health checks (docker-compose, Kubernetes, monitors).

            Example:
              replica-node health --data cluster-data/node1
            """)

    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        let health = try client.call(.health, expecting: \.health)
        if options.json {
            try Output.json(encoding: health)
        } else if health.problems.isEmpty {
            Output.line(health.healthy ? "healthy" : "not serving")
        } else {
            for problem in health.problems {
                Output.line("\(problem.failsHealth ? "" : "warning: ")\(problem.kind.rawValue) \(TextLine.visible(problem.subject)): \(TextLine.visible(problem.message)) "
                    + "(\(problem.count)x since \(TimeText.iso8601(problem.since)))")
            }
        }
        if !health.healthy { throw ExitCode.failure }
    }
}
