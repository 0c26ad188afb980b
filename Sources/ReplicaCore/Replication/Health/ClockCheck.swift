/// Whether this node's clock agrees with its members' clocks, from the offsets measured by
/// heartbeat echoes (`ClockEstimate`).
///
/// A node whose clock is more than `limit` from the median of its live members refuses local
/// writes: stamped far in the future, they would be refused by every member until their clocks
/// caught up, and then win over writes made later in real time (history reordered). Until its
/// clock has been compared with a live member's (the first heartbeat echoes, a second or two
/// after start), local writes wait, at most `grace`: a node cannot know it is wrong before then.
struct ClockCheck: Sendable {
    enum Verdict: Equatable, Sendable {
        /// No member is heard: nothing to compare with.
        case alone
        /// Members are heard but no offset is measured yet.
        case unverified
        /// The median of the members' offsets (theirs minus ours), within the limit.
        case agrees(medianMillis: Int64)
        /// Beyond the limit: local writes are refused.
        case skewed(medianMillis: Int64)
    }

    let limitMillis: Int64
    let grace: Duration
    private(set) var verdict: Verdict = .alone
    /// Whether the clock has agreed with the members' at least once since start.
    private(set) var hasAgreed = false
    private var unverifiedSince: MonotonicInstant?
    /// Since when a "skewed" judgement has waited for members not measured yet.
    private var skewDeferredSince: MonotonicInstant?

    init(limit: Duration, grace: Duration) {
        limitMillis = Int64(limit / .milliseconds(1))
        self.grace = grace
    }

    /// The median of `offsets`. Of an even count, the median of them and this node's own clock
    /// (offset 0) when a member's clock is within `limit` of ours, else the middle value nearer
    /// zero. With two members on one side of ours, either way the one nearer ours (one of them
    /// off, the other is believed). With one on either side and one of them near ours, ours is
    /// the middle clock: the middle value nearer zero was taken instead, and a node between
    /// members 40 s behind and 50 s ahead took the one behind as its members' time and refused
    /// its writes as stamped too far ahead, while that member took this node's clock as the
    /// median and accepted them. With both far off, ours has nothing to back it, and
    /// the nearer one is taken: a clock between two others 100 s away each is not believed.
    static func median(_ offsets: [Int64], limit: Int64) -> Int64? {
        guard !offsets.isEmpty else { return nil }
        let sorted = offsets.sorted()
        let upper = sorted[sorted.count / 2]
        guard sorted.count % 2 == 0 else { return upper }
        let lower = sorted[sorted.count / 2 - 1]
        // Ours lies between them: the members nearest ours on either side, so one backs ours if any does.
        if lower < 0 && upper > 0 && min(-lower, upper) <= limit { return 0 }
        return abs(lower) <= abs(upper) ? lower : upper
    }

    /// The median of `offsets` against this check's limit.
    func median(_ offsets: [Int64]) -> Int64? { Self.median(offsets, limit: limitMillis) }

    /// Re-judges from the offsets of the members heard directly that have a measurement, and
    /// how many more are heard but not measured yet. Returns the new verdict if it changed.
    ///
    /// "Skewed" waits for the members not measured yet, for at most `grace`: they may outvote
    /// the ones measured first. (At start-up a node whose clock is right may have measured only
    /// the one member whose clock is wrong; judged on that alone, it would refuse its writes.)
    mutating func evaluate(offsets: [Int64], unmeasured: Int, now: MonotonicInstant) -> Verdict? {
        let new: Verdict
        if let median = median(offsets) {
            let judged: Verdict = abs(median) > limitMillis ? .skewed(medianMillis: median) : .agrees(medianMillis: median)
            if case .skewed = judged, unmeasured > 0 {
                // Once per run of such judgements: a member never measured (a one-way link)
                // must not defer the verdict again and again.
                let since = skewDeferredSince ?? now
                skewDeferredSince = since
                new = now - since < grace ? .unverified : judged
            } else {
                skewDeferredSince = nil
                new = judged
            }
        } else {
            skewDeferredSince = nil
            new = unmeasured > 0 ? .unverified : .alone
        }
        if new == .unverified {
            unverifiedSince = unverifiedSince ?? now
        } else {
            unverifiedSince = nil
        }
        if case .agrees = new { hasAgreed = true }
        guard new != verdict else { return nil }
        verdict = new
        return new
    }

    /// The wall clock was stepped: what it was compared with says nothing of it now. It is
    /// as if never compared: local writes wait for a comparison as at start (a node cut off
    /// from its members whose clock jumped ahead stamped its writes minutes ahead, and members
    /// refused them until their own clocks got there).
    mutating func clockStepped(now: MonotonicInstant) {
        hasAgreed = false
        if verdict == .unverified { unverifiedSince = now }
    }

    /// Local writes wait (the clock is not compared yet, and the grace has not run out).
    func holdsWrites(now: MonotonicInstant) -> Bool {
        guard verdict == .unverified, let since = unverifiedSince else { return false }
        return now - since < grace
    }

    /// Whether local writes go ahead with a clock never compared: there is something to compare
    /// with (members or seeds), it has never agreed since start, and the grace is over. Refused
    /// under `requireClockCheck`, accepted (and listed) otherwise.
    func isUnchecked(now: MonotonicInstant) -> Bool {
        !hasAgreed && verdict == .unverified && !holdsWrites(now: now)
    }

    /// What happens to a local write now.
    enum LocalWrites: Equatable, Sendable {
        case accept
        /// Waiting for the first comparison (at most the grace).
        case hold
        /// The clock is beyond the limit from the members' median (theirs minus ours).
        case refuseSkewed(medianMillis: Int64)
        /// Never compared since start, and the configuration requires it (`requireClockCheck`).
        case refuseUnchecked
    }

    /// The one decision about local writes, at one instant: refused while skewed, held during
    /// the grace, refused after it when never compared and `requiringCheck`, accepted otherwise.
    func localWrites(now: MonotonicInstant, requiringCheck: Bool) -> LocalWrites {
        if let median = refusal { return .refuseSkewed(medianMillis: median) }
        if holdsWrites(now: now) { return .hold }
        if requiringCheck && isUnchecked(now: now) { return .refuseUnchecked }
        return .accept
    }

    /// Local writes are refused with this median offset.
    var refusal: Int64? {
        if case .skewed(let median) = verdict { return median }
        return nil
    }

    /// How one member's clock stands, for the `peerClock` problems `status` lists: a member is
    /// listed when its clock is beyond the limit from ours *and* from the members' median, so
    /// that it is the clock that is wrong. When this node's own clock is the wrong one, its
    /// members agree with the median and none is listed: the `clock` problem says it instead.
    enum MemberClock: Equatable, Sendable {
        case fine
        /// Ahead: what it writes now is stamped beyond what this node accepts, so its entries
        /// are refused here (and it refuses its own writes).
        case ahead(offsetMillis: Int64)
        /// Behind: it refuses its own writes.
        case behind(offsetMillis: Int64)
    }

    /// Judges a member's `offset` (theirs minus ours, ms) against the limit and the median of
    /// the members' offsets (`median(_:)` of the same measurements), after `evaluate`.
    func judge(memberOffset offset: Int64, median: Int64?) -> MemberClock {
        guard abs(offset - (median ?? 0)) > limitMillis else { return .fine }
        if offset > limitMillis + Int64(clamping: allowanceMillis) { return .ahead(offsetMillis: offset) }
        if offset < -limitMillis { return .behind(offsetMillis: offset) }
        return .fine
    }

    /// How much further ahead than our own clock a received timestamp may be: when our clock is
    /// behind the members' median, by that much (entries stamped by members whose clocks are
    /// fine must not be refused because ours is slow).
    /// The members' median offset (theirs minus ours) while this clock agrees with it; else 0.
    var agreedMedianMillis: Int64 {
        if case .agrees(let median) = verdict { return median }
        return 0
    }

    var allowanceMillis: UInt64 {
        if case .agrees(let median) = verdict, median > 0 { return UInt64(median) }
        return 0
    }
}
