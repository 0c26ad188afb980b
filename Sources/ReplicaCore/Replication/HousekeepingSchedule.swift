/// When a loop turn runs the housekeeping (judging clocks, members' timers, relays, seeds, the
/// next sync): at most once per `interval` while turns come fast, and at the latest `interval`
/// after a turn that skipped it, never on every turn.
///
/// Why: it cost 45 us a turn (profile of the latency benchmark: the clock check 12 us, the next
/// sync 8 us, relays 7 us, members' timers 7 us, seeds 6 us), and under load a loop turns once
/// per received message or submitted write, so at 10,000 saves a second the two nodes spent
/// nearly a core on it, and the next save waited for it. Nothing in it needs reacting to
/// faster than this: heartbeats come every 500 ms, and members are suspected after 1.5 s.
struct HousekeepingSchedule: Sendable {
    static let interval: Duration = .milliseconds(10)

    private(set) var next: ContinuousClock.Instant
    /// A turn skipped it since it last ran: the loop must wake for it by `next`, even if idle.
    private(set) var owed = false

    init(now: ContinuousClock.Instant) { next = now }

    /// Whether this turn runs it (and, if so, when it is next due).
    mutating func runs(now: ContinuousClock.Instant) -> Bool {
        guard now >= next else {
            owed = true
            return false
        }
        next = now + Self.interval
        owed = false
        return true
    }

    /// The longest the loop may sleep for it: until it is due if a turn skipped it, else no limit.
    func wake(now: ContinuousClock.Instant) -> Duration? {
        owed ? max(.zero, next - now) : nil
    }
}
