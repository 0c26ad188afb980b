/// Where a writer's clock stood after each publication of its writes in one life (`epoch`), by
/// the last sequence the publication used: turns "a member holds the stream through sequence
/// `s`" into "it holds every write of that writer stamped up to `t`", which a sync reply can
/// leave out.
///
/// Sound because writes are stamped in commit order by a clock that only moves forward, and
/// each commit's winners are published together: every write stamped at or below the clock's
/// reading after publication `p` was published by `p` or earlier (or never published, which
/// `unpublished` accounts for). Our own stream is recorded once per commit, not per update; a
/// member's, once per heartbeat heard from it (`heard`). The oldest records are dropped past
/// `capacity`, and a sequence older than every record vouches for nothing.
struct PublishedStamps: Sendable {
    private var sequences: [UInt64] = []
    private var stamps: [HybridTimestamp] = []
    /// The life of the writer these records are of.
    let epoch: UInt64
    let capacity: Int
    /// Writes stamped at or below this were stored without being published (no publisher yet):
    /// no sequence covers them.
    private(set) var floor = HybridTimestamp.zero

    init(epoch: UInt64, capacity: Int = 8192) {
        self.epoch = epoch
        self.capacity = max(capacity, 2)
    }

    /// A member's heartbeat said it had published through `sequence`, and that its next write
    /// is stamped at or above `timestamp`: only the stamps below it are vouched for. Since
    /// 0.30.0 it is the clock's `last` plus one. An older node sent its wall clock when that was
    /// ahead of `last`, with a logical part of 0, and a wall clock stepped back may stamp a later
    /// write below that: such readings are not recorded (a 0.30.0 node's has a logical part of
    /// 0 only after 65,535 stamps in one millisecond). A node stores writes unpublished only
    /// before its first heartbeat: stamps below the first one heard are never vouched for.
    mutating func heard(through sequence: UInt64, timestamp: HybridTimestamp) {
        guard timestamp.logical != 0 else { return }
        let below = HybridTimestamp(rawValue: timestamp.rawValue - 1)
        if sequences.isEmpty { unpublished(clock: below) }
        published(through: sequence, clock: below)
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
