import ArgumentParser
import Foundation
import ReplicaCore

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a CURVE key pair for a node: ID.key (secret, 0600) and ID.pub (to share).",
        discussion: """
            Give every node its own pair. Copy each node's ID.pub into the trust directory of \
            every node it talks to, then start nodes with --key ID.key --trust DIR and peers \
            named ID@HOST:PORT. See docs/security.md for rotation.

            Example:
              replica-node keygen --id node1 --out keys/
            """)

    @Option(help: "The node id the keys are for (names the files).") var id: String
    @Option(help: ArgumentHelp("Directory to write ID.key and ID.pub into.", valueName: "dir")) var out = "."
    @Flag(help: "Replace existing files.") var force = false
    @Flag(help: "Print JSON instead of text.") var json = false

    func validate() throws {
        guard NodeID.isValid(id) else { throw ValidationError("Invalid --id '\(id)': use 1-64 letters, digits, '.', '_' or '-'.") }
    }

    func run() throws {
        try reportingErrors {
            let keys = try CurveKeyPair.generate()
            let files = try KeyFiles.write(keys, id: id, to: URL(fileURLWithPath: out), force: force)
            if json {
                try Output.json(encoding: ["id": id, "publicKey": keys.publicKey, "keyFile": files.key.path, "publicKeyFile": files.pub.path])
            } else {
                Output.line("wrote \(files.key.path) (secret) and \(files.pub.path)")
                Output.line("public key: \(keys.publicKey)")
            }
        }
    }
}
