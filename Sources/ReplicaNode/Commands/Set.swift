import ArgumentParser
import Foundation
import ReplicaCore

/// `set` (named so as not to shadow `Swift.Set`).
struct SetCommand: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Write a JSON value to a key, replicated to every peer.",
        discussion: """
            The value must be valid JSON: quote strings ('"hello"'), numbers and objects as is; \
            it is stored without insignificant whitespace, and may then be up to \
            \(ControlEndpoint.replicaLimits.maxPayloadBytes) bytes. Give it on the command line, \
            or with --file FILE (- for standard input) for a value too large for a command line \
            (Linux takes at most 128 KiB in one argument). Keys are 1 to \
            \(ControlEndpoint.replicaLimits.maxKeyBytes) bytes of UTF-8. A key or value the node \
            would refuse is a usage error (exit 64), and nothing is sent. Returns once the write \
            is committed to the node's database (printing its version and when it was written); \
            peers receive it at once or through anti-entropy. With --json, the entry as \
            `get --json` prints it.

            Examples:
              replica-node set greeting '"hello"' --data cluster-data/node1
              replica-node set config.theme '{"dark": true}' --data cluster-data/node1
              replica-node set --data cluster-data/node1 offset -- -5
              printf '{"title": "notes", "lines": ["a", "b"]}' \\
                | replica-node set notes --file - --data cluster-data/node1
            """)

    @Argument(help: "The key to write.") var key: String
    @Argument(help: "The value, as JSON (or give --file).") var value: String?
    @Option(help: ArgumentHelp("Read the JSON value from FILE, or from standard input with -.", valueName: "file"))
    var file: String?
    @OptionGroup var options: ClientOptions

    func validate() throws {
        try ClientChecks.validate(key: key, writable: true)
        switch (value, file) {
        case (nil, nil):
            // A negative number looks like an option to the parser, which then reports it missing
            // (an outside tester followed the old message and got nowhere).
            throw ValidationError("""
                Missing the value: give it as JSON after the key, or with --file FILE (- for standard input). \
                A negative number reads as an option: give the options first and the value after --, \
                as in: replica-node set --data DIR \(key) -- -5
                """)
        case (.some, .some): throw ValidationError("Give the value either after the key or with --file, not both.")
        case (let value?, nil): _ = try ClientChecks.validatedValue(Array(value.utf8), from: "")
        case (nil, .some): break  // read and checked in run, before connecting
        }
    }

    /// The value to send, checked as the node will check it (minified: a file may be
    /// pretty-printed).
    func json() throws -> [UInt8] {
        guard let file else { return try ClientChecks.validatedValue(Array((value ?? "").utf8), from: "") }
        let bytes = try FileProblem.readInput(file)
        return try ClientChecks.validatedValue(Array(bytes), from: file == "-" ? "standard input" : file)
    }

    func run() throws {
        // The value first: a bad file is reported whether or not the node runs.
        try reportingErrors { try write(try json(), with: try options.connect()) }
    }

    func perform(with client: ControlClient) throws {
        try write(try json(), with: client)
    }

    private func write(_ json: [UInt8], with client: ControlClient) throws {
        let entry = try client.call(.set(key: key, json: String(decoding: json, as: UTF8.self)), expecting: \.entry)
        if options.json { Output.json(EntryOutput.json(entry)) } else { Output.line("OK \(EntryOutput.versionText(entry.version))") }
    }
}
