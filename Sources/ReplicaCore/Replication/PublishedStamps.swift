/// Where our clock stood after each publication of our own writes in this life, by the last
/// sequence the publication used: turns "a member holds our stream through sequence `s`" into
/// "it holds every write of ours stamped up to `t`", which a sync reply can leave out.
///
/// Sound because writes are stamped in commit order by a clock that only moves forward, and
/// each commit's winners are published together: every write stamped at or below the clock's
/// reading after publication `p` was published by `p` or earlier (or never published, which
/// `unpublished` accounts for). Recorded once per commit, not per update; the oldest records
/// are dropped past `capacity`, and a sequence older than every record vouches for nothing.
struct PublishedStamps: Sendable {
    private var sequences: [UInt64] = []
    private var stamps: [HybridTimestamp] = []
    let capacity: Int
    /// Writes stamped at or below this were stored without being published (no publisher yet):
    /// no sequence covers them.
    private(set) var floor = HybridTimestamp.zero

    init(capacity: Int = 8192) {
        self.capacity = max(capacity, 2)
    }

    /// A publication ended at `sequence`, with the clock at `clock` (at least every stamp it carried).
    mutating func published(through sequence: UInt64, clock: HybridTimestamp) {
        if let last = sequences.last, sequence <= last { return }  // not ours to reorder
        if sequences.count == capacity {
            sequences.removeFirst(capacity / 2)
            stamps.removeFirst(capacity / 2)
        }
        sequences.append(sequence)
        stamps.append(clock)
    }

    /// Local winners were stored but not published, with the clock at `clock`.
    mutating func unpublished(clock: HybridTimestamp) {
        floor = max(floor, clock)
    }

    /// Every write of ours stamped in this range was published at or before `sequence` (nil:
    /// no record that old, or nothing since the floor).
    func stamps(through sequence: UInt64) -> ClosedRange<HybridTimestamp>? {
        // The last record at or before `sequence`.
        var low = 0
        var high = sequences.count
        while low < high {
            let middle = (low + high) / 2
            if sequences[middle] <= sequence { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let upper = stamps[low - 1]
        guard upper > floor else { return nil }
        return HybridTimestamp(rawValue: floor.rawValue + 1)...upper
    }
}
