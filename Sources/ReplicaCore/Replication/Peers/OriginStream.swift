/// How far one origin's update stream has been received, whatever path its updates took (the
/// origin's own connection or a relay through another member), and which updates are missing.
///
/// An origin numbers its published updates 1, 2, 3, ... within one epoch (one process life). A
/// receiver that sees a sequence jump, or a heartbeat announcing a higher sequence than it has,
/// knows exactly which updates it lost; they are repaired from the origin's retransmit buffer
/// (or fetched by a sync). A duplicate (the same update by two paths) is harmless: merging an
/// entry twice changes nothing, so the stream only decides what to ask for, never what to apply.
struct OriginStream: Equatable, Sendable {
    /// The epoch these sequences belong to (0: not known yet).
    private(set) var epoch: UInt64 = 0
    /// The highest sequence received or recorded as missing.
    private(set) var through: UInt64 = 0
    /// Lost sequences, oldest first, disjoint and not adjacent.
    private(set) var missing: [ClosedRange<UInt64>] = []
    /// How many times a loss was detected (for status).
    private(set) var gaps = 0
    /// The highest sequence the origin itself showed in this epoch (its heartbeats, its updates
    /// on its own connection). Another member's report claiming more covers nothing: it may lie.
    /// A relay does not raise it: its sequence is the relaying member's word, and that member's
    /// own report of the same number would otherwise be believed.
    private(set) var vouched: UInt64 = 0
    /// `epoch` and `through` were taken from another member's report before the origin showed
    /// anything of this epoch (even a report of through 0 names an epoch); the origin's first
    /// heartbeat confirms them or shows they were false.
    private(set) var throughIsHearsay = false
    /// `epoch` was named by a relay, not yet by the origin's own heartbeat: that heartbeat
    /// replaces it, lower or higher (a relaying member may name a life the origin never had).
    private(set) var epochIsHearsay = false
    /// Set by a new incarnation: from then on only the origin's own heartbeats move the epoch.
    /// A member relaying its updates may still tag them with the old life's epoch, which can
    /// be the higher one (the new life's clock was behind), and would lock the stream onto it.
    private var epochFromHeartbeatsOnly = false
    /// Sequences that arrived on the origin's own connection after it was lost (or re-dialled)
    /// and before a heartbeat on it said which epoch they belong to; nil while the connection's
    /// epoch is known. A member that restarts at the same address comes back on the same
    /// connection, numbering from 1 again, and its updates name no epoch: taken for its old
    /// life's, they filled that life's gaps and moved `through`, and for a heartbeat interval our
    /// reports claimed updates we did not have, which a sync reply leaves out.
    private var unconfirmed: [ClosedRange<UInt64>]?
    /// Held ranges at most (a connection's updates are consecutive: normally one range, a
    /// range per lost message otherwise); sequences beyond them show as gaps, and are repaired.
    static let unconfirmedRanges = 64

    /// What an arriving message means for the stream.
    enum Verdict: Equatable, Sendable {
        /// In order, or a late arrival that fills a gap, or a repeat: nothing to do.
        case inOrder
        /// Sequences were skipped: they are now in `missing`.
        case gap(ClosedRange<UInt64>)
        /// A new epoch began: the origin restarted, and whatever it published late in its last
        /// life that we did not get can no longer be repaired from it (a sync must bring it).
        case restarted
    }

    /// How many sequences are missing, saturating (status reads it; a range of a member's
    /// sequences may be longer than an `Int` counts).
    var missingCount: UInt64 {
        missing.reduce(0) { total, range in total.addingSaturated(Self.length(of: range)) }
    }

    /// The number of sequences in `range`, saturating at `UInt64.max`.
    static func length(of range: ClosedRange<UInt64>) -> UInt64 {
        (range.upperBound - range.lowerBound).addingSaturated(1)
    }

    /// Every update up to here was received or is being repaired: where the next repair starts.
    /// (Heartbeats report less: `PeerSession.heldThrough`.)
    var contiguousThrough: UInt64 {
        missing.first.map { $0.lowerBound - 1 } ?? through
    }

    /// How far this node may report holding the stream: nothing while all it knows of it is
    /// another member's report (a lie would pass on from report to report).
    var reportableThrough: UInt64 {
        throughIsHearsay ? 0 : contiguousThrough
    }

    /// The highest sequence that arrived, counting those on the origin's own connection that
    /// still wait for a heartbeat to name their epoch (`unconfirmed`): a heartbeat of this life
    /// moves `through` over them, so an entry of theirs dropped here is one of these.
    var receivedThrough: UInt64 {
        (unconfirmed ?? []).reduce(through) { max($0, $1.upperBound) }
    }

    /// An update with `sequence` arrived, of `epoch` if the message says (relays do), else of
    /// the epoch the origin's heartbeats announced.
    mutating func received(sequence: UInt64, epoch messageEpoch: UInt64? = nil) -> Verdict {
        received(sequence...sequence, epoch: messageEpoch)
    }

    /// Updates with consecutive `sequences` arrived (a batch, or one update).
    mutating func received(_ sequences: ClosedRange<UInt64>, epoch messageEpoch: UInt64? = nil) -> Verdict {
        if messageEpoch == nil, var held = unconfirmed {
            unconfirmed = nil  // one reference to the ranges: the change below copies nothing
            if let last = held.last, last.upperBound &+ 1 == sequences.lowerBound {
                held[held.count - 1] = last.lowerBound...sequences.upperBound
            } else if held.count < Self.unconfirmedRanges {
                held.append(sequences)
            }
            unconfirmed = held
            return .inOrder
        }
        if let messageEpoch, messageEpoch != epoch {
            // A straggler of an earlier life, unless all we know of the epoch is a member's report.
            guard messageEpoch > epoch || throughIsHearsay, !epochFromHeartbeatsOnly else { return .inOrder }
            let wasKnown = epoch != 0
            restart(epoch: messageEpoch, through: sequences.upperBound)
            // The relaying member's word: the origin showed nothing of this life yet.
            epochIsHearsay = true
            vouched = 0
            return wasKnown ? .restarted : .inOrder
        }
        if messageEpoch == nil { vouched = max(vouched, sequences.upperBound) }
        if epoch == 0 && through == 0 && missing.isEmpty {
            // The first updates seen, before any heartbeat: what came before was published before
            // we listened, and the start-up sync brings it.
            through = sequences.upperBound
            return .inOrder
        }
        if sequences.lowerBound == through &+ 1 {
            through = sequences.upperBound
            return .inOrder
        }
        if sequences.lowerBound > through {
            let lost = through + 1...sequences.lowerBound - 1
            note(lost)
            through = sequences.upperBound
            return .gap(lost)
        }
        // Late arrivals (repairs of a gap, a second path): they fill what they cover.
        remove(sequences.lowerBound...min(sequences.upperBound, through))
        through = max(through, sequences.upperBound)
        return .inOrder
    }

    /// The origin's heartbeat: it is in `epoch` and has published up to `sequence`. Everything
    /// it published before the heartbeat was sent earlier on the same ordered connection, so a
    /// higher sequence than ours means those updates were dropped.
    mutating func announced(epoch announced: UInt64, sequence: UInt64) -> Verdict {
        if let held = unconfirmed, announced >= epoch {
            // Its epoch is known now. Of a new life (a restart), they are part of what the
            // restart's sync covers; of this one, they count as they arrived.
            unconfirmed = nil
            if announced == epoch {
                epochIsHearsay = false  // the origin named it
                let gaps = held.map { received($0) }
                let verdict = noteThrough(sequence)
                return verdict == .inOrder ? gaps.first { $0 != .inOrder } ?? .inOrder : verdict
            }
        }
        return announcedOnKnownConnection(epoch: announced, sequence: sequence)
    }

    private mutating func announcedOnKnownConnection(epoch announced: UInt64, sequence: UInt64) -> Verdict {
        if throughIsHearsay || epochIsHearsay {
            // A relay may be ahead of the origin's heartbeat (another path): only a report's
            // through is checked against the sequence.
            let reported = throughIsHearsay
            throughIsHearsay = false
            epochIsHearsay = false
            if announced != epoch || (reported && sequence < through) {
                // A member reported (or relayed) another life, or reported more than the origin
                // published: what we hold of this stream is not known, and a sync with the origin
                // brings it.
                restart(epoch: announced, through: sequence)
                return .restarted
            }
        }
        if announced != epoch {
            guard announced > epoch else { return .inOrder }
            guard epoch != 0 else {
                // The first heartbeat: updates seen before it belong to this epoch.
                epoch = announced
                vouched = max(vouched, sequence)
                if through == 0 && missing.isEmpty {
                    through = sequence
                    return .inOrder
                }
                return noteThrough(sequence)
            }
            restart(epoch: announced, through: sequence)
            return .restarted
        }
        vouched = max(vouched, sequence)
        return noteThrough(sequence)
    }

    /// Updates on the origin's own connection wait for a heartbeat to name their epoch.
    var awaitsEpoch: Bool { unconfirmed != nil }

    /// The origin's own connection was lost or re-dialled: what comes on it next may be of a
    /// new life, until a heartbeat on it names the epoch (before the first heartbeat, updates
    /// already wait for one's).
    mutating func connectionLost() {
        guard epoch != 0, unconfirmed == nil else { return }
        unconfirmed = []
    }

    /// Another member reports holding this origin's stream up to `sequence` in `epoch`: what we
    /// lack of it (nothing if we are ahead or the epochs differ).
    func behind(epoch other: UInt64, through sequence: UInt64) -> ClosedRange<UInt64>? {
        guard other == epoch, epoch != 0, sequence > contiguousThrough else { return nil }
        return contiguousThrough + 1...sequence
    }

    /// Like a heartbeat, but learnt from a member that holds the stream this far: the
    /// sequences beyond ours are missing.
    mutating func learned(epoch other: UInt64, through sequence: UInt64) -> Verdict {
        guard other == epoch, epoch != 0 else { return .inOrder }
        return noteThrough(sequence)
    }

    /// The oldest missing range, at most `limit` sequences long, taken out to be repaired.
    mutating func takeRepair(limit: UInt64) -> ClosedRange<UInt64>? {
        guard let first = missing.first else { return nil }
        // Saturating: a member's sequences may come near UInt64.max (bugged or hostile), and
        // the end of the repair must not overflow.
        let (end, overflow) = first.lowerBound.addingReportingOverflow(max(limit, 1) - 1)
        let range = first.lowerBound...(overflow ? first.upperBound : min(first.upperBound, end))
        if range.upperBound == first.upperBound {
            missing.removeFirst()
        } else {
            missing[0] = range.upperBound + 1...first.upperBound
        }
        return range
    }

    /// A repair taken out by `takeRepair` did not complete (its connection was lost, it timed
    /// out): its range is missing again, to be asked for anew.
    mutating func returnRepair(_ range: ClosedRange<UInt64>) {
        guard epoch != 0 || through != 0, range.lowerBound <= through else { return }
        let range = range.lowerBound...min(range.upperBound, through)
        var merged = missing + [range]
        merged.sort { $0.lowerBound < $1.lowerBound }
        missing = []
        for next in merged {
            if let last = missing.last, last.upperBound &+ 1 >= next.lowerBound {
                missing[missing.count - 1] = last.lowerBound...max(last.upperBound, next.upperBound)
            } else {
                missing.append(next)
            }
        }
    }

    /// A sync with a member that held this stream through `sequence` brought everything up to
    /// it. A stream not seen yet starts there: an update seen later beyond it is a gap (not a
    /// first sight that a sync is assumed to have covered).
    /// Returns how far it covered (0: nothing).
    @discardableResult
    mutating func covered(through sequence: UInt64, epoch covered: UInt64) -> UInt64 {
        guard covered != 0 else { return 0 }
        if epoch == 0 && through == 0 && missing.isEmpty {
            epoch = covered
            through = sequence
            // Hearsay whatever the sequence: a report of through 0 still names an epoch, which
            // the origin's own heartbeats must replace even when theirs is lower.
            throughIsHearsay = true
            return sequence
        }
        // A report beyond anything the origin showed is not believed at all (not even up to
        // that): an honest member is rarely ahead of the origin's own word, and a lying one
        // would otherwise clear losses its sync never brought.
        guard covered == epoch, sequence > 0, sequence <= vouched else { return 0 }
        remove(0...sequence)
        through = max(through, sequence)
        return sequence
    }

    /// A full sync that held everything (start-up, restart): forget all known losses.
    mutating func clearMissing() { missing.removeAll() }

    private mutating func noteThrough(_ sequence: UInt64) -> Verdict {
        guard sequence > through else { return .inOrder }
        let lost = through + 1...sequence
        note(lost)
        through = sequence
        return .gap(lost)
    }

    /// The origin is another incarnation (its data directory was replaced): its stream starts
    /// over from its next heartbeat, whatever that heartbeat's epoch. Epochs only grow within an
    /// incarnation (the store keeps the last one); a new one may start below the old one's when
    /// its clock is behind, and its heartbeats would otherwise be taken for an older life's.
    mutating func beginIncarnation() {
        epochFromHeartbeatsOnly = true
        unconfirmed = nil
        epoch = 0
        through = 0
        vouched = 0
        throughIsHearsay = false
        epochIsHearsay = false
        missing.removeAll()
    }

    private mutating func restart(epoch: UInt64, through: UInt64) {
        self.epoch = epoch
        self.through = through
        vouched = through
        throughIsHearsay = false
        epochIsHearsay = false
        missing.removeAll()
    }

    private mutating func note(_ range: ClosedRange<UInt64>) {
        gaps += 1
        if let last = missing.last, last.upperBound >= range.lowerBound - 1 {
            missing[missing.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
        } else {
            missing.append(range)
        }
    }

    private mutating func remove(_ range: ClosedRange<UInt64>) {
        var result: [ClosedRange<UInt64>] = []
        for existing in missing {
            guard existing.overlaps(range) else {
                result.append(existing)
                continue
            }
            if existing.lowerBound < range.lowerBound { result.append(existing.lowerBound...range.lowerBound - 1) }
            if existing.upperBound > range.upperBound { result.append(range.upperBound + 1...existing.upperBound) }
        }
        missing = result
    }
}
