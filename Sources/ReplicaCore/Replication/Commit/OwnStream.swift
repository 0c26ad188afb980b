/// This life's stream of updates as this node published it: the last sequence taken, the key
/// each recent sequence carried (`RetransmitBuffer`, what repairs are served from), and this
/// node's clock after each publication (`PublishedStamps`, what a member's report of the
/// stream covers).
struct OwnStream: Sendable {
    /// The last sequence taken (0: none yet in this life).
    private(set) var sequence: UInt64 = 0
    private(set) var retransmit: RetransmitBuffer
    private(set) var stamps: PublishedStamps
    /// The buffer batches of updates are encoded into, reused (its capacity kept) by every commit.
    var buffer: [UInt8] = []

    init(epoch: UInt64, retransmitWindow: Int) {
        retransmit = RetransmitBuffer(capacity: retransmitWindow)
        stamps = PublishedStamps(epoch: epoch)
    }

    /// Takes the next sequence for an update of `key`.
    mutating func take(_ key: String) -> UInt64 {
        sequence &+= 1
        retransmit.record(key, sequence: sequence)
        return sequence
    }

    /// What a commit took went out (or, `sent` false, could not: the node is shut down) with
    /// the clock at `clock`.
    mutating func published(clock: HybridTimestamp, sent: Bool = true) {
        if sent {
            stamps.published(through: sequence, clock: clock)
        } else {
            stamps.unpublished(clock: clock)
        }
    }

    /// The keys of the updates `range` carried, if the ring still holds them all.
    func keys(_ range: ClosedRange<UInt64>) -> [String]? { retransmit.keys(range) }
}
