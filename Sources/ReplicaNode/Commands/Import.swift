import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Import: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write many keys from JSON Lines: one {\"key\": ..., \"value\": ...} per line.",
        discussion: """
            The whole input is checked first; if any line is not an object with a string "key" \
            and a "value", nothing is written and the line number is reported. A key given on \
            several lines gets the last line's value. Writes go in batches (one database \
            transaction each, a few in flight at once); on a terminal, progress is shown on \
            stderr. Prints how many keys were written.

            Example:
              printf '{"key":"a","value":1}\\n{"key":"b","value":"two"}\\n' \\
                | replica-node import - --data cluster-data/node1
            """)

    @Argument(help: "A JSON Lines file, or - for standard input.") var file: String
    @Option(help: "Keys written per request (1...100000).") var batch = 1000
    @OptionGroup var options: ClientOptions

    /// Batches sent before the first reply is awaited: the node commits one while the next
    /// arrives.
    static let window = 4
    /// Bytes of JSON Lines per request at most (the control socket takes 4 MiB messages; the
    /// bytes travel as base64).
    static let maxBatchBytes = 1 << 20

    func validate() throws {
        guard (1...100_000).contains(batch) else { throw ValidationError("--batch must be between 1 and 100000.") }
    }

    func perform(with client: ControlClient) throws {
        let input = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
        let batches = try Self.batches(of: input, keysPerBatch: batch, maxBytes: Self.maxBatchBytes)
        let total = batches.reduce(0) { $0 + $1.keys }
        var client = client
        client.timeout = .seconds(30)
        var progress = ImportProgress(total: total)
        var written = 0
        var inFlight = 0
        for batch in batches {
            if inFlight == Self.window {
                written += try receiveWritten(client)
                inFlight -= 1
                progress.show(written)
            }
            try client.send(.importLines(batch.lines))
            inFlight += 1
        }
        for _ in 0..<inFlight {
            written += try receiveWritten(client)
            progress.show(written)
        }
        progress.finish(written)
        if options.json {
            var object = JSONObjectWriter()
            object.field("written", written)
            Output.json(object.closed)
        } else {
            Output.line("OK \(written) keys")
        }
    }

    private func receiveWritten(_ client: ControlClient) throws -> Int {
        guard let reply = try client.receive(timeout: client.timeout) else { throw client.notAnswering }
        guard let written = reply.written else { throw ControlClient.UnexpectedReply(reply: reply) }
        return written
    }

    /// Lines for one request, and how many keys they hold.
    struct Batch {
        var lines: Data
        var keys: Int
    }

    /// Checks every line of `input` and cuts the lines that count (the last one of each key)
    /// into batches. Throws `JSONLines.BadLine` before anything is sent.
    static func batches(of input: Data, keysPerBatch: Int, maxBytes: Int) throws -> [Batch] {
        try input.withUnsafeBytes { raw throws(JSONLines.BadLine) -> [Batch] in
            let bytes = raw.bindMemory(to: UInt8.self)
            var lines: [(range: Range<Int>, key: String)] = []
            var lastLine: [String: Int] = [:]
            try JSONLines.forEachItem(in: bytes) { item, _ in
                lastLine[item.key] = lines.count
                lines.append((item.line, item.key))
            }
            var batches: [Batch] = []
            var current = Data()
            var keys = 0
            for (index, (line, key)) in lines.enumerated() where lastLine[key] == index {
                if keys == keysPerBatch || (keys > 0 && current.count + line.count >= maxBytes) {
                    batches.append(Batch(lines: current, keys: keys))
                    current = Data()
                    keys = 0
                }
                current.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[line]))
                current.append(0x0A)
                keys += 1
            }
            if keys > 0 { batches.append(Batch(lines: current, keys: keys)) }
            return batches
        }
    }
}

/// `import`'s progress: redrawn in place on a terminal, silent otherwise (scripts read the
/// final line on stdout).
struct ImportProgress {
    let total: Int
    let started = ContinuousClock.now
    private let onTerminal = isatty(STDERR_FILENO) == 1
    private var lastShown = ContinuousClock.now

    init(total: Int) { self.total = total }

    mutating func show(_ written: Int) {
        guard onTerminal, ContinuousClock.now - lastShown >= .milliseconds(100) else { return }
        lastShown = .now
        Output.toStandardError("\rimported \(written)/\(total) keys, \(rate(written)) keys/s ")
    }

    func finish(_ written: Int) {
        guard onTerminal else { return }
        Output.toStandardError("\rimported \(written)/\(total) keys, \(rate(written)) keys/s\n")
    }

    private func rate(_ written: Int) -> Int {
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        return seconds > 0 ? Int(Double(written) / seconds) : 0
    }
}
