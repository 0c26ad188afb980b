/// The node's periodic duties, and when each is next due: the heartbeat, the discovery beacon,
/// the periodic sync, the tombstone sweep, the look at the store's file and disk, and the save
/// of the member table. One value decides when each runs; the replica runs what it returns.
struct PeriodicDuties: Sendable {
    enum Duty: Int, CaseIterable, Sendable {
        case heartbeat, beacon, periodicSync, tombstoneSweep, storeFileCheck
    }

    /// The order duties run in (made once: looked at every turn).
    private static let order = Duty.allCases

    struct Intervals: Sendable {
        var heartbeat: Duration
        /// nil: no beacon (discovery is off).
        var beacon: Duration?
        var periodicSync: Duration
        var tombstoneSweep: Duration
        var storeFileCheck: Duration = .seconds(2)
        var memberTableSave: Duration = .seconds(1)
        var memberTableRetry: Duration = .seconds(30)
    }

    let intervals: Intervals
    /// When each duty is next due, by `Duty.rawValue`.
    private var next: [MonotonicInstant]
    private(set) var memberTableSave: MonotonicInstant
    /// When a sync request last had expired tombstones collected (at most once a second: a
    /// collection looks at every key, and requests may come in floods).
    private var lastRequestCollection: MonotonicInstant
    /// When the loop last turned (a long gap is a stall: `turned(now:)`).
    private(set) var lastTurn: MonotonicInstant

    /// Everything is due at once, except the periodic sync (a catch-up sync starts the node).
    init(intervals: Intervals, now: MonotonicInstant) {
        self.intervals = intervals
        next = Array(repeating: now, count: Duty.allCases.count)
        next[Duty.periodicSync.rawValue] = now + intervals.periodicSync
        memberTableSave = now
        lastRequestCollection = now - .seconds(1)
        lastTurn = now
    }

    /// The duties due now, in the order they run, each due again an interval from now.
    mutating func due(now: MonotonicInstant) -> [Duty] {
        var due: [Duty] = []
        for duty in Self.order where now >= next[duty.rawValue] {
            guard let interval = interval(of: duty) else { continue }
            next[duty.rawValue] = now + interval
            due.append(duty)
        }
        return due
    }

    private func interval(of duty: Duty) -> Duration? {
        switch duty {
        case .heartbeat: intervals.heartbeat
        case .beacon: intervals.beacon
        case .periodicSync: intervals.periodicSync
        case .tombstoneSweep: intervals.tombstoneSweep
        case .storeFileCheck: intervals.storeFileCheck
        }
    }

    /// When `duty` is next due.
    subscript(duty: Duty) -> MonotonicInstant { next[duty.rawValue] }

    /// Runs `duty` at the next turn (a heartbeat that shows a withheld update's sequence at
    /// once; a sweep that left tombstones).
    mutating func runSoon(_ duty: Duty, now: MonotonicInstant) { next[duty.rawValue] = now }

    /// A loop turn at `now`; returns the time since the last one.
    mutating func turned(now: MonotonicInstant) -> Duration {
        defer { lastTurn = now }
        return now - lastTurn
    }

    /// The node was stalled for `gap`: the periodic sync is put off by as much (members' silence
    /// in that time is not theirs).
    mutating func stalled(for gap: Duration) {
        next[Duty.periodicSync.rawValue] += gap
    }

    /// Whether the member table may be saved now (`force`: at shutdown).
    func savesMemberTable(now: MonotonicInstant, force: Bool) -> Bool { force || now >= memberTableSave }

    /// The member table was saved, or its save failed (retried later).
    mutating func memberTableSaved(now: MonotonicInstant, failed: Bool) {
        memberTableSave = now + (failed ? intervals.memberTableRetry : intervals.memberTableSave)
    }

    /// Whether a sync request served now may have expired tombstones collected first.
    func requestMayCollect(now: MonotonicInstant) -> Bool { now - lastRequestCollection >= .seconds(1) }

    /// A sync request was served at `now`.
    mutating func requestServed(now: MonotonicInstant) {
        if requestMayCollect(now: now) { lastRequestCollection = now }
    }
}
