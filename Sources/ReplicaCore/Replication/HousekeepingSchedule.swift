/// When a loop turn runs the housekeeping (judging clocks, members' timers, relays, seeds, the
/// next sync): at most once per `interval` while turns come fast, at the latest `interval` after
/// a turn that skipped it, and at the next turn after an event it judges (`runSoon`: a
/// heartbeat, a finished sync or repair), never on every turn.
///
/// Why: it cost 45 us a turn (profile of the latency benchmark: the clock check 12 us, the next
/// sync 8 us, relays 7 us, members' timers 7 us, seeds 6 us), and under load a loop turns once
/// per received message or submitted write, so at 10,000 saves a second the two nodes spent
/// nearly a core on it, and the next save waited for it. What it judges changes with heartbeats
/// (every 500 ms), finished syncs and time (members are suspected after 1.5 s): those events
/// have it run at once, as before, and time is looked at every 10 ms.
struct HousekeepingSchedule: Sendable {
    static let interval: Duration = .milliseconds(10)

    private(set) var next: MonotonicInstant
    /// A turn skipped it since it last ran: the loop must wake for it by `next`, even if idle.
    private(set) var owed = false
    /// An event it judges happened: the next turn runs it, due or not.
    private(set) var requested = false

    init(now: MonotonicInstant) { next = now }

    /// Whether this turn runs it (and, if so, when it is next due).
    mutating func runs(now: MonotonicInstant) -> Bool {
        guard now >= next || requested else {
            owed = true
            return false
        }
        next = now + Self.interval
        owed = false
        requested = false
        return true
    }

    /// An event it judges happened (a heartbeat, a finished sync): run it at the next turn.
    mutating func runSoon() { requested = true }

    /// The longest the loop may sleep for it: none if an event asked for it, until it is due if
    /// a turn skipped it, else no limit.
    func wake(now: MonotonicInstant) -> Duration? {
        if requested { return .zero }
        return owed ? max(.zero, next - now) : nil
    }
}
