import Foundation

/// What waits for the next group commit: local writes (each with its caller waiting) and entries
/// received from members; and whether the store has been failing.
///
/// Everything queued during one loop turn is committed in one transaction. If the commit fails
/// (a full disk), the local writers get the error and nothing of theirs is published, and the
/// received entries are dropped: their senders still hold them, and a catch-up sync fetches them
/// once the store works again. While it keeps failing, received entries are not even tried for a
/// back-off that doubles up to `maxBackoff` (a full disk must not turn into a busy loop); local
/// writes are still tried, one commit each, since a caller is waiting for the answer.
struct CommitQueue: Sendable {
    /// A local write waiting for the commit. It is stamped (given its version) only when the
    /// commit takes it: a write that waits (for the clock check) or is refused never moves the
    /// clock, and the stamps of one commit follow everything it received.
    struct PendingWrite: Sendable {
        var requests: [Replica.WriteRequest]
        var completion: WriteCompletion
    }

    /// Received entries waiting for the commit, with the member each came through. Two arrays,
    /// not an array of pairs: the commit takes `entries` whole as the start of its batch (moved,
    /// not copied entry by entry).
    struct Inbound: Sendable {
        var entries: [Entry] = []
        /// The member each of `entries` came from (for observers).
        var sources: [NodeID] = []

        var count: Int { entries.count }
        var isEmpty: Bool { entries.isEmpty }
    }

    /// A store that failed its last commit.
    struct Failure: Equatable, Sendable {
        var first: Date
        var last: Date
        var count: Int
        var message: String
        /// Received entries are dropped until then.
        var retryAt: MonotonicInstant
        var backoff: Duration
        /// A fetch of what was dropped was asked for since the last failure.
        var refetchAsked = false
        /// When that fetch is next due, and the wait before it: it doubles up to
        /// `maxRefetchBackoff`, longer than the inbound back-off, because each fetch brings
        /// everything dropped (megabytes, for a node far behind) to test a disk that may still
        /// be full. A commit that works (a local write, a live update) ends the failure sooner.
        var refetchAt: MonotonicInstant
        var refetchBackoff: Duration
        /// It began within a minute of the last failure's end: the store alternates (room for
        /// small commits, not for a fetch), so its end does not start a fetch at once.
        var recurred = false
    }

    static let firstBackoff: Duration = .milliseconds(250)
    static let maxBackoff: Duration = .seconds(5)
    static let maxRefetchBackoff: Duration = .seconds(60)

    private(set) var writes: [PendingWrite] = []
    private(set) var inbound = Inbound()
    private(set) var failure: Failure?
    /// The fetch back-off of the failure that ended last, and until when it still counts: a
    /// store that fails again soon after (a disk with room for a small commit but not for a
    /// fetch) goes on from it instead of starting over at a quarter second. (A tester's nearly
    /// full disk alternated: each small commit that fit ended the failure, and the fetch that
    /// followed at once brought 3 MB to fail again, 6 to 7 times a second.)
    private var lastRefetch: (backoff: Duration, until: MonotonicInstant)?
    /// After a recurring failure ended: no sync before its fetch was due.
    private var syncsNotBefore: MonotonicInstant?
    /// The space of a disk with less room than a large commit needs, while commits work (before
    /// any failed, or after a failure ended): not over for the operator. On a full disk with
    /// room for small commits in SQLite's log only, each small one ended the failure and each
    /// large one began it again, and `health` passed between the two (the `disk-full` fault test).
    private(set) var shortOfSpace: DiskSpace?
    /// A look at the disk found less free than `DiskSpace.roomForCommits` since the last time it
    /// found the room to recover (see `fetchOwed(afterLookAt:frameBytes:now:)`).
    private var lackedRoom = false

    var isEmpty: Bool { writes.isEmpty && inbound.isEmpty }

    /// The keys whose writes failed commits refused, in the user's terms, until a commit writes
    /// again: listed one by one up to `listedSaveFailures`, the rest in one row.
    private(set) var failedSaves: [String: ProblemFact] = [:]
    static let listedSaveFailures = 20
    static let moreSaveFailuresSubject = "(more keys)"

    /// A failed commit refused a write of `subject`. (An import onto a full disk listed one row
    /// per key: 4,001 problems, 5,000 lines of `status`.)
    mutating func saveFailed(_ subject: String, reason: String, at date: Date = Date()) {
        let listed = failedSaves[subject] != nil || failedSaves.count < Self.listedSaveFailures
        let row = listed ? subject : Self.moreSaveFailuresSubject
        let message = listed ? reason : "writes of more keys than the \(Self.listedSaveFailures) listed failed too "
            + "(the count is of those writes): \(reason)"
        var fact = failedSaves[row] ?? ProblemFact(message, since: date, occurrences: 0)
        fact.message = message
        fact.last = date
        fact.occurrences = (fact.occurrences ?? 0) + 1
        failedSaves[row] = fact
    }

    /// A commit wrote: the refusals of failing commits are over. Returns how many were listed.
    mutating func savesWork() -> Int {
        defer { failedSaves = [:] }
        return failedSaves.count
    }

    /// The `commit` problem: commits fail, or they work on a disk short of space (described by
    /// `shortOfSpace`, which knows the frame size).
    func commitProblem(shortOfSpace describe: (DiskSpace) -> String) -> ProblemFact? {
        if let failure {
            // "Fail", not "are refused": a small write may still fit in SQLite's log on a full disk.
            return ProblemFact(
                "commits fail (\(failure.message)): local writes fail (a small one may still fit), and received "
                    + "entries are fetched again once commits work, retried with back-off",
                since: failure.first, last: failure.last, occurrences: failure.count)
        }
        return shortOfSpace.map { ProblemFact(describe($0)) }
    }

    mutating func enqueue(_ write: PendingWrite) { writes.append(write) }

    /// Queues a received entry, unless the store is failing and its back-off has not passed;
    /// returns whether it was queued.
    mutating func accept(_ entry: Entry, from node: NodeID, now: MonotonicInstant) -> Bool {
        if let failure, now < failure.retryAt { return false }  // counted by the replica
        inbound.entries.append(entry)
        inbound.sources.append(node)
        return true
    }

    /// Everything queued, to commit now; with `holdingWrites`, the received entries only (local
    /// writes wait, e.g. for the clock check).
    mutating func takeBatch(holdingWrites: Bool = false) -> (writes: [PendingWrite], inbound: Inbound) {
        defer { if !holdingWrites { writes.removeAll(keepingCapacity: true) } }
        // Handed over, not shared: the queue starts a new one, so the caller holds the only
        // reference and can append to it in place.
        var taken = Inbound()
        swap(&taken, &inbound)
        // Room for as many as this batch had: under load the next is alike, and an array grown
        // from empty is reallocated a dozen times on the way to a few thousand entries.
        inbound.entries.reserveCapacity(taken.count)
        inbound.sources.reserveCapacity(taken.count)
        return (holdingWrites ? [] : writes, taken)
    }

    /// Takes the queued local writes out (to fail them).
    mutating func takeWrites() -> [PendingWrite] {
        defer { writes.removeAll() }
        return writes
    }

    /// The commit succeeded; returns the failure it ended, if any. `disk` (read only then) is
    /// the store's disk: a failure that ends with less free than `DiskSpace.roomToRecover`
    /// (for messages of up to `frameBytes`) leaves the store `shortOfSpace`.
    mutating func committed(
        now: MonotonicInstant, disk: @autoclosure () -> DiskSpace?, frameBytes: Int
    ) -> Failure? {
        defer { failure = nil }
        if let failure {
            lastRefetch = (failure.refetchBackoff, now + Self.maxRefetchBackoff)
            syncsNotBefore = failure.recurred ? failure.refetchAt : nil
            shortOfSpace = Self.short(disk(), frameBytes: frameBytes, wasShort: true)
        }
        return failure
    }

    /// Whether a catch-up for failed commits that brought `entries` calls for a test commit:
    /// with nothing received, no commit of its own tells whether the store writes again. Only
    /// while commits fail: once they work again on a disk short of space, the look at the disk
    /// clears that, and a refused test would start a failure no commit had.
    func needsTestCommit(afterCatchUpOf entries: Int) -> Bool { entries == 0 && failure != nil }

    /// What a look at the disk changed.
    enum SpaceChange: Equatable, Sendable {
        case unchanged
        /// Less free than the room: before any commit failed, or again after it had the room.
        case began
        /// It has the room again, or its space can no longer be read.
        case ended
    }

    /// The disk looked at (`nil`: its space cannot be read). The store becomes `shortOfSpace`
    /// when it has less free than `DiskSpace.roomForCommits`, and stays so until it has
    /// `DiskSpace.roomToRecover`; also before any commit failed: small
    /// commits fit in SQLite's log long after a disk shows 0 bytes free, and `health` passed
    /// until a large one failed (5 s in an outside tester's run). Not judged while
    /// commits fail: the failure says more.
    mutating func spaceMeasured(_ disk: DiskSpace?, frameBytes: Int) -> SpaceChange {
        guard failure == nil else { return .unchanged }
        let wasShort = shortOfSpace != nil
        shortOfSpace = Self.short(disk, frameBytes: frameBytes, wasShort: wasShort)
        switch (wasShort, shortOfSpace != nil) {
        case (false, true): return .began
        case (true, false): return .ended
        default: return .unchanged
        }
    }

    /// After a look at the disk: whether to fetch now what failed commits dropped. Yes when the
    /// disk lacked room at an earlier look and has the room to recover now (space was freed:
    /// what the fetch's back-off, up to a minute, waits for), if commits fail or a failure ended
    /// within the last minute (its fetch may have failed, or been put off); the fetch is then
    /// due at once. (The `disk-full` fault test's node3, its writers done, did not catch up
    /// within 30 s of the space being freed.) Not for a disk that never lacked room (read-only:
    /// the back-off stands), and once per such return.
    mutating func fetchOwed(afterLookAt disk: DiskSpace?, frameBytes: Int, now: MonotonicInstant) -> Bool {
        guard let disk else { return false }
        if disk.lacksRoomForCommits(frameBytes: frameBytes, wasShort: false) {
            lackedRoom = true
            return false
        }
        guard lackedRoom, !disk.lacksRoomForCommits(frameBytes: frameBytes, wasShort: true) else { return false }
        lackedRoom = false
        let endedLately = lastRefetch.map { now < $0.until } ?? false
        guard failure != nil || endedLately || syncsNotBefore != nil else { return false }
        if var current = failure {
            current.retryAt = now
            current.refetchAt = now
            current.refetchAsked = true  // asked here
            failure = current
        }
        syncsNotBefore = nil
        lastRefetch = nil
        return true
    }

    private static func short(_ disk: DiskSpace?, frameBytes: Int, wasShort: Bool) -> DiskSpace? {
        disk.flatMap { $0.lacksRoomForCommits(frameBytes: frameBytes, wasShort: wasShort) ? $0 : nil }
    }

    /// The commit failed with `message`; returns whether this is a new failure (not a repeat).
    mutating func failed(_ message: String, now: MonotonicInstant, date: Date = Date()) -> Bool {
        shortOfSpace = nil
        if var current = failure {
            current.last = date
            current.count += 1
            current.message = message
            current.backoff = min(Self.maxBackoff, current.backoff * 2)
            current.retryAt = now + current.backoff
            // Only a failure that follows a fetch (its entries failed too) puts the next one off
            // longer; failures of live entries meanwhile leave the fetch's schedule alone.
            if current.refetchAsked {
                current.refetchBackoff = min(Self.maxRefetchBackoff, current.refetchBackoff * 2)
                current.refetchAt = now + current.refetchBackoff
            }
            current.refetchAsked = false
            failure = current
            return false
        }
        let recent = lastRefetch.flatMap { now < $0.until ? $0.backoff : nil }
        let refetchBackoff = recent.map { min(Self.maxRefetchBackoff, $0 * 2) } ?? Self.firstBackoff
        failure = Failure(
            first: date, last: date, count: 1, message: message, retryAt: now + Self.firstBackoff, backoff: Self.firstBackoff,
            refetchAt: now + refetchBackoff, refetchBackoff: refetchBackoff, recurred: recent != nil)
        return true
    }

    /// Whether to fetch again what was dropped: once per failure, when its refetch back-off has
    /// passed (the fetch brings entries to commit, which tells whether the store works again).
    mutating func refetchDue(now: MonotonicInstant) -> Bool {
        guard let current = failure, !current.refetchAsked, now >= current.refetchAt else { return false }
        failure?.refetchAsked = true
        return true
    }

    /// Whether received entries may be committed again (no failure, or its back-off passed).
    func acceptsInbound(now: MonotonicInstant) -> Bool {
        failure.map { now >= $0.retryAt } ?? true
    }

    /// Whether a sync may start. While commits fail, only once the fetch's back-off has passed:
    /// a sync for any reason (digests that differ, a periodic check) brings the same entries
    /// to the same full disk. (Digest syncs of 9 MB came every 5 s on an idle cluster.) After a
    /// failure that recurred ends, also not before its fetch was due: a small commit that fits
    /// does not prove the disk takes a fetch.
    func acceptsSyncs(now: MonotonicInstant) -> Bool {
        guard let failure else { return syncsNotBefore.map { now >= $0 } ?? true }
        return now >= failure.retryAt && now >= failure.refetchAt
    }

    /// A sync started while commits fail: it is the fetch that tests the store, and if what it
    /// brings fails too, the next one waits twice as long.
    mutating func syncStarted() {
        failure?.refetchAsked = true
    }
}
