/// The last published updates, by sequence number, so that a peer that lost some of them
/// (PUB/SUB drops at the high-water mark, or while reconnecting) can ask for exactly those
/// instead of a full anti-entropy pass. A ring: the oldest are overwritten.
struct RetransmitBuffer {
    private var slots: [(sequence: UInt64, entry: Entry)?]

    init(capacity: Int) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    mutating func record(_ entry: Entry, sequence: UInt64) {
        slots[Int(sequence % UInt64(slots.count))] = (sequence, entry)
    }

    /// The entries published as `range`, or nil if any of them has been overwritten.
    func entries(_ range: ClosedRange<UInt64>) -> [Entry]? {
        guard range.count <= slots.count else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(range.count)
        for sequence in range {
            guard let slot = slots[Int(sequence % UInt64(slots.count))], slot.sequence == sequence else { return nil }
            entries.append(slot.entry)
        }
        return entries
    }
}
