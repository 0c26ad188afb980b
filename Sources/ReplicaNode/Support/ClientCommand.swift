import ArgumentParser
import Foundation

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
