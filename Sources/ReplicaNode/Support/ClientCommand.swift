import ArgumentParser
import Foundation
import ReplicaCore

/// Options every client command shares: which node, and how to print.
struct ClientOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "The data directory of the node to talk to (or $REPLICA_DATA).", valueName: "dir"))
    var data: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    /// The directory given by --data or $REPLICA_DATA.
    var dataPath: String? {
        if let data, !data.isEmpty { return data }
        if let path = getenv("REPLICA_DATA").map({ String(cString: $0) }), !path.isEmpty { return path }
        return nil
    }

    func validate() throws {
        guard dataPath != nil else {
            throw ValidationError("Missing --data DIR (or REPLICA_DATA): the data directory of the node to talk to.")
        }
    }

    func connect() throws -> ControlClient {
        try ControlClient(dataDirectory: URL(fileURLWithPath: dataPath ?? ""))
    }
}

/// A command that talks to a running node through the control socket in its data directory.
///
/// They all run the same way: options are checked in `validate()` (a usage error, exit 64),
/// then `run()` connects and calls `perform(with:)`; any error it throws becomes one line on
/// stderr and exit 1. Adding a command is a type with its options and `perform`, and a
/// `ControlRequest` case for what it asks the node.
protocol ClientCommand: ParsableCommand {
    var options: ClientOptions { get }
    /// Asks the node and prints its answer.
    func perform(with client: ControlClient) throws
}

extension ClientCommand {
    func run() throws {
        try reportingErrors { try perform(with: try options.connect()) }
    }
}

/// Runs a command body, turning its errors into a one-line message and exit code 1.
/// Usage errors (ValidationError) and explicit exit codes pass through to the root command.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as ValidationError {
        throw error
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Output.error("\(error)")
        throw ExitCode.failure
    }
}

/// The checks a client makes of the keys and values it sends, against the limits its node
/// enforces (`ControlEndpoint.replicaLimits`, as `import` checks its lines): what the node would
/// refuse is a usage error (exit 64), found before connecting, with the limit in the message.
enum ClientChecks {
    /// `key` as the node will take it: 1 to `maxKeyBytes` bytes of UTF-8, no U+0000, and (with
    /// `writable`, for `set` and `delete`) not a reserved key of a counter or log.
    static func validate(key: String, writable: Bool) throws(ValidationError) {
        if writable && FamilyKey.isReserved(key) { throw ValidationError(ReservedKey.message) }
        let limit = ControlEndpoint.replicaLimits.maxKeyBytes
        do {
            try ControlEndpoint.replicaLimits.validate(key: key)
        } catch {
            switch error {
            case .tooLarge:
                // The node's own wording (`ReplicaError.invalidKey`), as `import` has it too.
                throw ValidationError("invalid key: \(error)")
            default:
                let what = key.isEmpty ? "it is empty" : "it contains U+0000"
                throw ValidationError("invalid key: \(what) (a key is 1 to \(limit) bytes of UTF-8, without U+0000)")
            }
        }
    }

    /// The longest counter name, in bytes, whose slots' keys are within the key limit.
    static var longestCounterName: Int { ControlEndpoint.replicaLimits.maxKeyBytes - FamilyKey.counterSlotOverhead }

    /// A counter name whose slot keys (U+001F, `counter/`, the escaped name, `/`, an
    /// incarnation) fit the key limit; the node would refuse the longer ones.
    static func validate(counterName name: String) throws(ValidationError) {
        let key = FamilyKey.counterSlot(name, incarnation: UUID())
        do {
            try ControlEndpoint.replicaLimits.validate(key: key)
        } catch {
            throw ValidationError(
                "invalid counter name: its keys would be \(key.utf8.count) bytes, over the key limit of "
                    + "\(ControlEndpoint.replicaLimits.maxKeyBytes) (a name may have up to \(longestCounterName) bytes; "
                    + "'/' and '%' count 3)")
        }
    }

    /// `json` without insignificant whitespace, if it is one JSON value within the value limit;
    /// `source` names where it was read ("standard input", a file), "" for the command line.
    static func validatedValue(_ json: [UInt8], from source: String) throws(ValidationError) -> [UInt8] {
        guard let value = JSONText.minified(json) else {
            let shown = json.count > 200 ? String(decoding: json.prefix(200), as: UTF8.self) + "..." : String(decoding: json, as: UTF8.self)
            let place = source.isEmpty ? "" : " in " + source
            guard json.contains(where: { !JSONScanner.isWhitespace($0) }) else { throw ValidationError("no JSON value\(place): it is empty") }
            // The quoting hint only where a bare word was given (text, true-ish words): not for
            // a value cut short or otherwise broken.
            let bareWord = json.first { !JSONScanner.isWhitespace($0) }.map { ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") } ?? false
            throw ValidationError("invalid JSON value\(place): \(shown)" + (bareWord ? " (strings need quotes: '\"text\"')" : ""))
        }
        do {
            try ControlEndpoint.replicaLimits.validate(payload: value)
        } catch {
            throw ValidationError("\(error) (without whitespace\(source.isEmpty ? "" : ", read from " + source))")
        }
        return value
    }
}
