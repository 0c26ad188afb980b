import Foundation
import Logging

/// A node's log in a simulation: nothing by default (thousands of histories), or, for the nodes
/// named in `SIMULATION_LOG` (`n2,n3`, or `all`), every line at debug level on standard error,
/// stamped with the simulated time, to follow a replayed history.
struct SimulationLog: LogHandler {
    let label: String
    let time: SimulatedTime
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    static func logger(for node: String, time: SimulatedTime) -> Logger {
        let named = ProcessInfo.processInfo.environment["SIMULATION_LOG"]?.split(separator: ",").map(String.init) ?? []
        guard named.contains(node) || named.contains("all") else {
            return Logger(label: "sim.\(node)") { _ in SwiftLogNoOpLogHandler() }
        }
        return Logger(label: node) { label in SimulationLog(label: label, time: time) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let seconds = Double(time.elapsed / .microseconds(1)) / 1_000_000
        let extra = (metadata.merging(event.metadata ?? [:]) { $1 }).map { " \($0)=\($1)" }.sorted().joined()
        FileHandle.standardError.write(Data(String(format: "%10.6f %@ %@ %@%@\n", seconds, label, "\(event.level)", "\(event.message)", extra).utf8))
    }
}
