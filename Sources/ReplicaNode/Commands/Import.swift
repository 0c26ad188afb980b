import ArgumentParser
import Foundation
import ReplicaCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Import: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write many keys from JSON Lines: one {\"key\": ..., \"value\": ...} per line.",
        discussion: """
            Each line may also carry "encoding" and "schema" as `get --json` prints them: with \
            "encoding": "base64" the value is a base64 string whose bytes are stored, and \
            "schema" (0-65535, default 0) is stored with the value, so exported registers come \
            back as they were (such a file goes only to a node of 0.20.0 or later: an older one \
            refuses it, and nothing is written). The whole input is checked first: if any line is not an object \
            with a string "key" and a "value", or its key is reserved (starts with U+001F), \
            holds U+0000, or is longer than \
            \(ControlEndpoint.replicaLimits.maxKeyBytes) bytes, or its value is longer than \
            \(ControlEndpoint.replicaLimits.maxPayloadBytes) bytes (without whitespace), nothing \
            is written and import exits with 64, naming the line. Keys are distinct when their \
            UTF-8 bytes are; a key given on several lines gets the last line's value. Writes go \
            in batches (one database transaction each, a few in flight at once); on a terminal, \
            progress is shown on stderr. Prints how many keys were written.

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
    /// Bytes of JSON Lines per request at most, but for a batch of one long line (at most
    /// `maxLineBytes`). The control socket takes `ControlEndpoint.maxRequestBytes` (4 MiB) and
    /// the bytes travel as base64 (4/3 as many).
    static let maxBatchBytes = 1 << 20

    func validate() throws {
        guard (1...100_000).contains(batch) else { throw ValidationError("--batch must be between 1 and 100000.") }
    }

    /// The first termination signal received while batches were being sent.
    static let stop = ReceivedSignal()
    /// Whether batches are being sent: before, a signal ends the import at once.
    static let sending = Atomic<Bool>(false)

    func run() throws {
        // Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT) once batches are being sent stops sending: the batches in
        // flight are answered, and the count of keys written is reported (it exited 130 saying
        // nothing). Before, nothing was sent: it exits at once (an input being read
        // from a terminal, a node being reached). A second signal exits at once too.
        SignalWaiter.handleTermination { signal in
            guard Import.sending.load(ordering: .acquiring) else { Glibc.exit(128 + signal) }
            Import.stop.record(signal)
        }
        // The input first, as `set --file` does: a file that cannot be read is reported whether
        // or not the node runs, and standard input is read before a socket could take its
        // descriptor (with fd 0 closed, libzmq's was read as the input).
        try reportingErrors {
            let input = try FileProblem.readInput(file)
            try perform(input, with: try options.connect())
        }
    }

    func perform(with client: ControlClient) throws {
        try perform(try FileProblem.readInput(file), with: client)
    }

    func perform(_ input: Data, with client: ControlClient) throws {
        let batches: [Batch]
        do {
            batches = try Self.batches(of: input, keysPerBatch: batch, maxBytes: Self.maxBatchBytes)
        } catch let error as JSONLines.BadLine {
            // Bad input, like a bad argument: a usage error (exit 64), and nothing was sent.
            throw ValidationError(error.description)
        }
        let total = batches.reduce(0) { $0 + $1.keys }
        var client = client
        client.timeout = .seconds(30)
        var progress = KeyProgress(verb: "imported", total: total)
        var written = 0
        var inFlight = 0
        let stop = Self.stop
        Self.sending.store(true, ordering: .releasing)
        do {
            for batch in batches {
                if let signal = stop.signal { throw StoppedBySignal(signal: signal) }
                if inFlight == Self.window {
                    inFlight -= 1
                    written += try receiveWritten(client)
                    progress.show(written)
                }
                try client.send(batch.typed ? .importTypedLines(batch.lines) : .importLines(batch.lines))
                inFlight += 1
            }
            while inFlight > 0 {
                inFlight -= 1
                written += try receiveWritten(client)
                progress.show(written)
            }
        } catch let tooOld as NodeTooOld {
            progress.finish(written)
            throw tooOld  // refused whole: nothing was written
        } catch {
            written += Self.writtenBy(inFlight, of: client)
            progress.finish(written)
            guard let stopped = error as? StoppedBySignal else { throw Interrupted(written: written, total: total, cause: error) }
            Output.error(Interrupted(written: written, total: total, cause: error).description)
            throw ExitCode(128 + stopped.signal)
        }
        progress.finish(written)
        if options.json {
            var object = JSONObjectWriter()
            object.field("written", written)
            Output.json(object.closed)
        } else {
            Output.line("OK \(written) \(written == 1 ? "key" : "keys")")
        }
    }

    /// The user stopped the import (Ctrl-C: `signal` SIGINT); it exits with 128 + `signal`, as
    /// the shell reports a command a signal ended.
    struct StoppedBySignal: Error, CustomStringConvertible {
        var signal: Int32
        var description: String {
            let names = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP", SIGQUIT: "SIGQUIT"]
            return "interrupted (\(names[signal] ?? "signal \(signal)"))"
        }
    }

    /// An import that stopped part-way (the node stopped, or stopped answering): what was
    /// written, so that the user knows where things stand.
    struct Interrupted: Error, CustomStringConvertible {
        var written: Int
        var total: Int
        var cause: any Error
        var description: String {
            "\(cause); \(written) of \(total) keys were written (each batch is all or nothing, and up to \(Import.window) batches "
                + "in flight may have been written too); importing the file again writes every key again (newer writes to those keys since are replaced)"
        }
    }

    /// What the `count` batches still in flight wrote, as their replies say, read for at most
    /// `drainTime`. A node that stops refuses at once the requests it reads after it began to
    /// stop, and answers those it read before once they are committed: the first refusal
    /// overtook earlier batches' successes, and the count told the user to resume from was
    /// short ("49000 of 300000 written", 52,000 there).
    static func writtenBy(_ count: Int, of client: ControlClient) -> Int {
        let deadline = ContinuousClock.now + drainTime
        var written = 0
        for _ in 0..<count {
            let left = deadline - .now
            guard left > .zero else { break }
            do {
                guard let reply = try client.receive(timeout: left) else { break }
                written += reply.written ?? 0
            } catch is ControlFailure {
                continue  // that batch was refused: the next may still have been written
            } catch {
                break  // gone: nothing more comes
            }
        }
        return written
    }

    /// How long an interrupted import reads the replies still on their way.
    static let drainTime: Duration = .seconds(5)

    private func receiveWritten(_ client: ControlClient) throws -> Int {
        let reply: ControlReply?
        do {
            reply = try client.receive(timeout: client.timeout)
        } catch let failure as ControlFailure where failure.isMalformedRequest {
            throw NodeTooOld(dataDirectory: client.dataDirectory)
        }
        guard let reply else { throw client.notAnswering }
        guard let written = reply.written else { throw ControlClient.UnexpectedReply(reply: reply, toChange: true) }
        Output.changeWasApplied()
        return written
    }

    /// A node older than 0.20.0 refused `importTypedLines` (only a file with "encoding" or
    /// "schema" is sent so, and then every batch is): nothing was written.
    struct NodeTooOld: Error, CustomStringConvertible {
        var dataDirectory: URL
        var description: String {
            "the node serving \(dataDirectory.path) runs a replica-node older than 0.20.0, which does not take lines with "
                + "\"encoding\" or \"schema\" as this client sends them (nodes before 0.19.0 store a base64 value as a JSON "
                + "string, and every value at schema 0); nothing was written: import through a node of 0.20.0 or later"
        }
    }

    /// Lines for one request, and how many keys they hold.
    struct Batch {
        var lines: Data
        var keys: Int
        /// The file holds lines with "encoding" or "schema" (every batch of it says so): sent as
        /// `importTypedLines`, which an older node refuses rather than store them wrongly.
        var typed = false
    }

    /// One line to send: as it is in the input, or rewritten.
    enum Line {
        case input(Range<Int>)
        case rewritten([UInt8])

        var count: Int {
            switch self {
            case .input(let range): range.count
            case .rewritten(let bytes): bytes.count
            }
        }
    }

    /// Checks every line of `input` (its form, and its key and value against `limits`, as the
    /// node will) and cuts the lines that count (the last one of each key) into batches of at
    /// most `keysPerBatch` keys and `maxBytes` bytes (one longer line goes alone, rewritten to
    /// at most `maxLineBytes(limits)`). Throws `JSONLines.BadLine` before anything is sent.
    static func batches(
        of input: Data, keysPerBatch: Int, maxBytes: Int, limits: WireLimits = ControlEndpoint.replicaLimits
    ) throws -> [Batch] {
        try input.withUnsafeBytes { raw throws(JSONLines.BadLine) -> [Batch] in
            let bytes = raw.bindMemory(to: UInt8.self)
            var lines: [Line] = []
            // Whether each line is the last of its key.
            var isLast: [Bool] = []
            // By the key's bytes (`ExactKey`): "caf\u{E9}" and "cafe\u{301}" are two keys.
            var lastLine: [ExactKey: Int] = [:]
            var typed = false
            try JSONLines.forEachItem(in: bytes) { item, line throws(JSONLines.BadLine) in
                let toSend = try Self.line(for: item, in: line, limits: limits, maxBytes: maxBytes)
                if item.decoded != nil || item.schema != 0 { typed = true }
                if let previous = lastLine.updateValue(lines.count, forKey: ExactKey(item.key)) { isLast[previous] = false }
                lines.append(toSend)
                isLast.append(true)
            }
            var batches: [Batch] = []
            var current = Data()
            var keys = 0
            for (index, line) in lines.enumerated() where isLast[index] {
                if keys == keysPerBatch || (keys > 0 && current.count + line.count + 1 > maxBytes) {
                    batches.append(Batch(lines: current, keys: keys, typed: typed))
                    current = Data()
                    keys = 0
                }
                switch line {
                case .input(let range): current.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[range]))
                case .rewritten(let bytes): current.append(contentsOf: bytes)
                }
                current.append(0x0A)
                keys += 1
            }
            if keys > 0 { batches.append(Batch(lines: current, keys: keys, typed: typed)) }
            return batches
        }
    }

    /// The longest line `batches` sends: a rewritten line with the longest key, all escaped
    /// (`\u001f`: 6 bytes a byte), and the largest value (in base64: 4 bytes for 3), with its
    /// encoding and schema.
    static func maxLineBytes(_ limits: WireLimits) -> Int {
        #"{"key":"","value":"","encoding":"base64","schema":65535}"#.utf8.count + 6 * limits.maxKeyBytes
            + (limits.maxPayloadBytes + 2) / 3 * 4
    }

    /// What the node would refuse in an item, as a `BadLine` (a key or a value over `limits`),
    /// and else the line to send: as it is, or, when longer than `maxBytes` (whitespace, or
    /// members import ignores), rewritten as `{"key":...,"value":...}` with the value
    /// minified, so that no request exceeds the control socket's limit.
    static func line(
        for item: JSONLines.Item, in line: UnsafeBufferPointer<UInt8>, limits: WireLimits, maxBytes: Int
    ) throws(JSONLines.BadLine) -> Line {
        do {
            try limits.validate(key: item.key)
        } catch {
            throw JSONLines.BadLine(line: item.number, reason: error.description)
        }
        // What the node stores is the decoded bytes of a base64 value, or the minified value,
        // never longer than the value as written.
        var minified: [UInt8]?
        if let decoded = item.decoded {
            do {
                try limits.validate(payload: decoded)
            } catch {
                throw JSONLines.BadLine(line: item.number, reason: error.description + " (decoded from base64)")
            }
        } else if item.value.range.count > limits.maxPayloadBytes {
            let value = JSONScanner(line).minified(item.value)
            do {
                try limits.validate(payload: value)
            } catch {
                throw JSONLines.BadLine(line: item.number, reason: error.description + " (without whitespace)")
            }
            minified = value
        }
        guard line.count > maxBytes else { return .input(item.line) }
        var bytes = Array(#"{"key":"#.utf8)
        JSONObjectWriter.appendString(item.key, to: &bytes)
        bytes += #","value":"#.utf8
        bytes += minified ?? JSONScanner(line).minified(item.value)
        if item.decoded != nil { bytes += #","encoding":"base64""#.utf8 }
        if item.schema != 0 { bytes += Array(#","schema":\#(item.schema)"#.utf8) }
        bytes.append(UInt8(ascii: "}"))
        return .rewritten(bytes)
    }
}
