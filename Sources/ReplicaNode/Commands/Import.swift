import ArgumentParser
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write many keys from JSON Lines: one {\"key\": ..., \"value\": ...} per line.",
        discussion: """
            The whole input is checked first; if any line is not an object with a string "key" \
            and a "value", nothing is written and the line number is reported. Writes go in \
            batches (one database transaction each); progress is printed to stderr.

            Example: replica-node import backup.jsonl --data /tmp/n1
                     printf '{"key":"a","value":1}\\n' | replica-node import - --data /tmp/n1
            """)

    @Argument(help: "A JSON Lines file, or - for standard input.") var file: String
    @Option(help: "Keys written per request.") var batch = 1000
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard (1...100_000).contains(batch) else { throw ValidationError("--batch must be between 1 and 100000.") }
    }

    func run() throws {
        try reportingErrors {
            let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            let items = try Self.parse(data)
            let client = try options.client()
            var written = 0
            var lastReport = ContinuousClock.now
            for start in stride(from: 0, to: items.count, by: batch) {
                let slice = Array(items[start..<min(start + batch, items.count)])
                written += try client.call(ControlRequest(command: .setMany, items: slice)).written ?? 0
                if ContinuousClock.now - lastReport > .seconds(1) {
                    FileHandle.standardError.write(Data("imported \(written)/\(items.count)\n".utf8))
                    lastReport = .now
                }
            }
            if options.json { try printJSON(["written": written]) } else { print("OK \(written) keys") }
        }
    }

    struct BadLine: Error, CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason); nothing was written" }
    }

    static func parse(_ data: Data) throws -> [ControlRequest.Item] {
        var items: [ControlRequest.Item] = []
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                throw BadLine(line: index + 1, reason: "not a JSON object")
            }
            guard let key = object["key"] as? String, !key.isEmpty else { throw BadLine(line: index + 1, reason: "missing string \"key\"") }
            guard let value = object["value"] else { throw BadLine(line: index + 1, reason: "missing \"value\"") }
            let encoded = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
            items.append(ControlRequest.Item(key: key, value: String(decoding: encoded, as: UTF8.self)))
        }
        return items
    }
}
