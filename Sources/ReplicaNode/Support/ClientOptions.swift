import ArgumentParser
import Foundation

/// Options every client command shares: which node, and how to print.
struct ClientOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "The data directory of the node to talk to (or $REPLICA_DATA).", valueName: "dir"))
    var data: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    var dataDirectory: URL {
        get throws {
            guard let path = data ?? ProcessInfo.processInfo.environment["REPLICA_DATA"], !path.isEmpty else {
                throw ValidationError("Missing --data DIR (or REPLICA_DATA): the data directory of the node to talk to.")
            }
            return URL(fileURLWithPath: path)
        }
    }

    func client() throws -> ControlClient {
        try ControlClient(dataDirectory: dataDirectory)
    }
}

/// Prints `message` to stderr as the one-line error of a failed command.
func printError(_ message: String) {
    FileHandle.standardError.write(Data("replica-node: \(message)\n".utf8))
}

/// Runs a client command body, turning its errors into a one-line message and exit code 1.
/// Usage errors (ValidationError) keep ArgumentParser's handling and exit code 64.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as ValidationError {
        throw error
    } catch {
        printError("\(error)")
        throw ExitCode.failure
    }
}

func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
