/// The keys of the last published updates, by sequence number, so that a member that lost some
/// of them (PUB/SUB drops at the high-water mark, while reconnecting, or while it was paused)
/// can ask for exactly those instead of a full anti-entropy pass. A ring: the oldest are
/// overwritten.
///
/// Only keys are kept: a repair reads the keys' entries from the store when it is served (a key
/// written again since sends its newer entry, which supersedes the lost one anyway). So the
/// ring costs a few machine words per update and can cover a long pause: 262,144 updates by
/// default, several seconds of writes at full speed.
struct RetransmitBuffer {
    private var slots: [(sequence: UInt64, key: String)?]

    init(capacity: Int) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    mutating func record(_ key: String, sequence: UInt64) {
        slots[Int(sequence % UInt64(slots.count))] = (sequence, key)
    }

    /// The keys published as `range`, or nil if any of them has been overwritten.
    func keys(_ range: ClosedRange<UInt64>) -> [String]? {
        guard range.count <= slots.count else { return nil }
        var keys: [String] = []
        keys.reserveCapacity(range.count)
        for sequence in range {
            guard let slot = slots[Int(sequence % UInt64(slots.count))], slot.sequence == sequence else { return nil }
            keys.append(slot.key)
        }
        return keys
    }
}
