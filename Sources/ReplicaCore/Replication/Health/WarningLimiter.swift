/// At most one log line per cause per interval: a flood of rejected input is a count, not a
/// flood of lines.
struct WarningLimiter: Sendable {
    let interval: Duration
    private var last: [String: MonotonicInstant] = [:]
    private var suppressed: [String: Int] = [:]

    init(interval: Duration = .seconds(10)) { self.interval = interval }

    /// Whether to log `cause` now; if so, also how many occurrences went unlogged since the last line.
    mutating func admit(_ cause: String, now: MonotonicInstant) -> (log: Bool, suppressed: Int) {
        if let previous = last[cause], now - previous < interval {
            suppressed[cause, default: 0] += 1
            return (false, 0)
        }
        last[cause] = now
        return (true, suppressed.removeValue(forKey: cause) ?? 0)
    }
}
