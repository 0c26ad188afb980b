import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream changes as the node applies them, with origin and version.",
        discussion: """
            Prints one line per applied change whose key starts with PREFIX (all keys if \
            omitted): local writes and those received from peers. With --json, one JSON object \
            per line. Runs until Ctrl-C; exits with 1 if the node stops.

            Example: replica-node watch config. --data /tmp/n2
            """)

    @Argument(help: "Only keys starting with this prefix.") var prefix = ""
    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            let client = try options.client()
            try client.send(ControlRequest(command: .watch, prefix: prefix))
            guard let first = try client.receive(timeout: .seconds(5)) else {
                throw ControlClient.Unreachable(message: "the node did not accept the watch within 5 s")
            }
            if let error = first.error { throw error }
            FileHandle.standardError.write(Data("watching \(prefix.isEmpty ? "all keys" : "keys starting with \(prefix)") on \(try options.dataDirectory.path) (Ctrl-C to stop)\n".utf8))
            while true {
                guard let reply = try client.receive(timeout: .seconds(2)) else {
                    // Quiet for a while: make sure the node is still there.
                    guard client.nodeIsListening else { throw ControlClient.Unreachable(message: "the node stopped") }
                    continue
                }
                guard let change = reply.change else { continue }
                if options.json {
                    try printJSON(change)
                } else {
                    let value = change.entry.value ?? "(removed)"
                    print("\(change.entry.key) = \(value)  [\(change.entry.version) from \(change.from)]")
                }
                fflush(nil)  // one line per change, even into a pipe
            }
        }
    }
}
