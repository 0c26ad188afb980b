import ArgumentParser
import Foundation
import ReplicaCore

struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a node's peers: address, id, state, last seen, in sync.",
        discussion: "Example: replica-node peers --data /tmp/n1 --json")

    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            guard let status = try options.client().call(ControlRequest(command: .status)).status else { return }
            if options.json { try printJSON(status.peers) } else { print(Status.renderPeers(status.peers), terminator: "") }
        }
    }
}
