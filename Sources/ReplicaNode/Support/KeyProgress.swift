import ReplicaCore

#if canImport(Glibc)
import Glibc
#endif

/// The progress of a long `import` or `export`: redrawn in place on a terminal, silent
/// otherwise (scripts read stdout, and a log file would fill with redraws).
struct KeyProgress {
    /// "imported", "exported".
    let verb: String
    /// How many keys there are in all, when known.
    let total: Int?
    let started = ContinuousClock.now
    private let onTerminal = isatty(STDERR_FILENO) == 1
    private var lastShown = ContinuousClock.now

    init(verb: String, total: Int? = nil) {
        self.verb = verb
        self.total = total
    }

    mutating func show(_ done: Int) {
        guard onTerminal, ContinuousClock.now - lastShown >= .milliseconds(100) else { return }
        lastShown = .now
        Output.toStandardError("\r\(line(done)) ")
    }

    func finish(_ done: Int) {
        guard onTerminal else { return }
        Output.toStandardError("\r\(line(done))\n")
    }

    /// `imported 5000/10000 keys, 41000 keys/s`, `exported 5000 keys, 41000 keys/s`.
    private func line(_ done: Int) -> String {
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let rate = seconds > 0 ? Int(Double(done) / seconds) : 0
        return "\(verb) \(done)\(total.map { "/\($0)" } ?? "") keys, \(rate) keys/s"
    }
}
