import Testing
@testable import ReplicaCore

/// `OriginStream`: which of an origin's updates are missing, whatever path they took.
@Suite struct OriginStreamTests {
    /// A message arriving at a stream: an update (with the epoch a relay names), or a heartbeat.
    enum Arrival: CustomStringConvertible {
        case update(UInt64, epoch: UInt64? = nil)
        /// A batch of updates (kind 8): consecutive sequences in one message.
        case batch(ClosedRange<UInt64>)
        case heartbeat(epoch: UInt64, sequence: UInt64)
        /// The origin's own connection was lost or re-dialled (its verdict counts as in order).
        case connectionLost

        var description: String {
            switch self {
            case .update(let s, let e): "update \(s)" + (e.map { " of epoch \($0)" } ?? "")
            case .batch(let r): "batch \(r)"
            case .heartbeat(let e, let s): "heartbeat \(e)/\(s)"
            case .connectionLost: "connection lost"
            }
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var arrivals: [Arrival]
        var verdicts: [OriginStream.Verdict]
        var missing: [ClosedRange<UInt64>]
        var through: UInt64
        /// `receivedThrough` after the arrivals, if the row checks it.
        var received: UInt64? = nil
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "first sight sets the baseline, no gap", arrivals: [.heartbeat(epoch: 7, sequence: 40)],
            verdicts: [.inOrder], missing: [], through: 40),
        Row(name: "in order", arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(2), .update(3)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 3),
        Row(name: "a skipped update is a gap", arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(4)],
            verdicts: [.inOrder, .inOrder, .gap(2...3)], missing: [2...3], through: 4),
        Row(name: "a late arrival fills its gap", arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(4), .update(3)],
            verdicts: [.inOrder, .inOrder, .gap(2...3), .inOrder], missing: [2...2], through: 4),
        Row(name: "a duplicate (the same update by a relay) changes nothing",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(2), .update(2, epoch: 7), .update(1)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 2),
        Row(name: "a heartbeat ahead of the updates proves they were dropped",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .heartbeat(epoch: 7, sequence: 5)],
            verdicts: [.inOrder, .inOrder, .gap(2...5)], missing: [2...5], through: 5),
        Row(name: "adjacent gaps merge", arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(3), .heartbeat(epoch: 7, sequence: 6)],
            verdicts: [.inOrder, .gap(1...2), .gap(4...6)], missing: [1...2, 4...6], through: 6),
        Row(name: "a new epoch is a restart: old losses are dropped",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(3), .heartbeat(epoch: 9, sequence: 2)],
            verdicts: [.inOrder, .gap(1...2), .restarted], missing: [], through: 2),
        Row(name: "a straggler of an earlier epoch is ignored",
            arrivals: [.heartbeat(epoch: 9, sequence: 4), .update(100, epoch: 7), .heartbeat(epoch: 7, sequence: 100)],
            verdicts: [.inOrder, .inOrder, .inOrder], missing: [], through: 4),
        Row(name: "updates before the first heartbeat belong to its epoch",
            arrivals: [.update(5), .update(6), .heartbeat(epoch: 7, sequence: 8)],
            verdicts: [.inOrder, .inOrder, .gap(7...8)], missing: [7...8], through: 8),
        Row(name: "a relay names the epoch: a new one restarts the stream",
            arrivals: [.heartbeat(epoch: 7, sequence: 3), .update(1, epoch: 8)],
            verdicts: [.inOrder, .restarted], missing: [], through: 1),
        Row(name: "a batch in order moves through to its last", arrivals: [.heartbeat(epoch: 7, sequence: 0), .batch(1...5), .update(6)],
            verdicts: [.inOrder, .inOrder, .inOrder], missing: [], through: 6),
        Row(name: "a batch after a lost one: the gap is between them", arrivals: [.heartbeat(epoch: 7, sequence: 0), .batch(1...5), .batch(9...12)],
            verdicts: [.inOrder, .inOrder, .gap(6...8)], missing: [6...8], through: 12),
        Row(name: "a repaired batch fills the middle of a gap", arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(10), .batch(3...5)],
            verdicts: [.inOrder, .gap(1...9), .inOrder], missing: [1...2, 6...9], through: 10),
        Row(name: "a batch overlapping through counts only what is new", arrivals: [.heartbeat(epoch: 7, sequence: 3), .batch(2...6)],
            verdicts: [.inOrder, .inOrder], missing: [], through: 6),
        Row(name: "a batch before the first heartbeat sets the baseline", arrivals: [.batch(20...29), .heartbeat(epoch: 7, sequence: 29)],
            verdicts: [.inOrder, .inOrder], missing: [], through: 29),
        // helper-78: a member restarted at the same address comes back on the same connection,
        // numbering from 1, and its updates name no epoch: they filled the old life's gaps.
        Row(name: "after a lost connection, updates wait for a heartbeat to name their epoch",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(4), .connectionLost, .update(1), .batch(2...3)],
            verdicts: [.inOrder, .inOrder, .gap(2...3), .inOrder, .inOrder, .inOrder], missing: [2...3], through: 4),
        Row(name: "a new life's heartbeat then restarts the stream",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(4), .connectionLost, .update(1), .batch(2...3), .heartbeat(epoch: 9, sequence: 3)],
            verdicts: [.inOrder, .inOrder, .gap(2...3), .inOrder, .inOrder, .inOrder, .restarted], missing: [], through: 3),
        Row(name: "the same life's heartbeat counts them as they arrived",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .connectionLost, .update(4), .update(5), .heartbeat(epoch: 7, sequence: 5)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .inOrder, .gap(2...3)], missing: [2...3], through: 5),
        Row(name: "in order across a lost connection",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .connectionLost, .update(2), .heartbeat(epoch: 7, sequence: 2)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 2),
        Row(name: "a relay names its epoch and counts at once",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .connectionLost, .update(2, epoch: 7)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 2),
        // Simulator seed 3875: updates waiting for a heartbeat to name their epoch were received
        // all the same; one of theirs dropped here must count as lost (`receivedEntriesDropped`).
        Row(name: "nothing waiting: received is through",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .update(4)],
            verdicts: [.inOrder, .inOrder, .gap(2...3)], missing: [2...3], through: 4, received: 4),
        Row(name: "updates waiting for their epoch are received, not yet through",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .connectionLost, .update(2), .batch(3...5)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 1, received: 5),
        Row(name: "received reaches the last waiting range, past one lost on the way",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .connectionLost, .update(1), .update(3)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder], missing: [], through: 0, received: 3),
        Row(name: "the same life's heartbeat moves through to what was received",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .connectionLost, .update(1), .batch(2...13), .heartbeat(epoch: 7, sequence: 14)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .gap(14...14)], missing: [14...14], through: 14, received: 14),
        Row(name: "a new life's heartbeat: received is the restart's through",
            arrivals: [.heartbeat(epoch: 7, sequence: 0), .update(1), .connectionLost, .batch(1...3), .heartbeat(epoch: 9, sequence: 3)],
            verdicts: [.inOrder, .inOrder, .inOrder, .inOrder, .restarted], missing: [], through: 3, received: 3),
        // A life named by a relay is the relaying member's word (a hostile one names 2^48 - 1):
        // the origin's own heartbeat replaces it, lower or higher, as a reported one.
        Row(name: "a life first named by a relay gives way to the origin's lower one",
            arrivals: [.update(5, epoch: WireLimits.maxEpoch), .heartbeat(epoch: 7, sequence: 3)],
            verdicts: [.inOrder, .restarted], missing: [], through: 3),
        Row(name: "a new life named by a relay gives way to the origin's heartbeat of its own",
            arrivals: [.heartbeat(epoch: 7, sequence: 3), .update(1, epoch: WireLimits.maxEpoch), .heartbeat(epoch: 7, sequence: 4)],
            verdicts: [.inOrder, .restarted, .restarted], missing: [], through: 4),
        Row(name: "a relay's life gives way across a lost connection too",
            arrivals: [.update(5, epoch: WireLimits.maxEpoch), .connectionLost, .heartbeat(epoch: 7, sequence: 3)],
            verdicts: [.inOrder, .inOrder, .restarted], missing: [], through: 3),
        Row(name: "a relay's life the origin confirms counts on, the relay ahead of its heartbeat",
            arrivals: [.update(5, epoch: 7), .heartbeat(epoch: 7, sequence: 4), .heartbeat(epoch: 7, sequence: 8)],
            verdicts: [.inOrder, .inOrder, .gap(6...8)], missing: [6...8], through: 8),
        Row(name: "once the origin named its life, a relay's higher one is a restart again",
            arrivals: [.update(5, epoch: 7), .heartbeat(epoch: 7, sequence: 5), .update(1, epoch: 9), .heartbeat(epoch: 9, sequence: 2)],
            verdicts: [.inOrder, .inOrder, .restarted, .gap(2...2)], missing: [2...2], through: 2),
    ]

    @Test(arguments: rows) func arrivals(_ row: Row) {
        var stream = OriginStream()
        var verdicts: [OriginStream.Verdict] = []
        for arrival in row.arrivals {
            switch arrival {
            case .update(let sequence, let epoch): verdicts.append(stream.received(sequence: sequence, epoch: epoch))
            case .batch(let sequences): verdicts.append(stream.received(sequences))
            case .heartbeat(let epoch, let sequence): verdicts.append(stream.announced(epoch: epoch, sequence: sequence))
            case .connectionLost:
                stream.connectionLost()
                verdicts.append(.inOrder)
            }
        }
        #expect(verdicts == row.verdicts)
        #expect(stream.missing == row.missing)
        #expect(stream.through == row.through)
        if let received = row.received { #expect(stream.receivedThrough == received) }
    }

    @Test func repairsAreTakenOldestFirstInBoundedPieces() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 1, sequence: 0)
        _ = stream.received(sequence: 10_000)
        #expect(stream.contiguousThrough == 0)
        let check1 = stream.takeRepair(limit: 4096) == 1...4096
        #expect(check1)
        let check2 = stream.takeRepair(limit: 4096) == 4097...8192
        #expect(check2)
        #expect(stream.contiguousThrough == 8192)
        let check3 = stream.takeRepair(limit: 4096) == 8193...9999
        #expect(check3)
        let check4 = stream.takeRepair(limit: 4096) == nil
        #expect(check4)
        #expect(stream.contiguousThrough == 10_000)
    }

    @Test func aSyncCoversLossesUpToWhatTheMemberHeld() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 1, sequence: 0)
        _ = stream.received(sequence: 20)
        _ = stream.received(sequence: 40)
        #expect(stream.missing == [1...19, 21...39])
        stream.covered(through: 30, epoch: 1)
        #expect(stream.missing == [31...39])
        stream.covered(through: 99, epoch: 2)  // another life: says nothing about this one
        #expect(stream.missing == [31...39])
    }

    /// A sync that covered a stream we had not seen yet fixes where it starts: an update seen
    /// later beyond it is a gap, not a first sight (the partial partition's first writes).
    @Test func aStreamFirstKnownFromASyncHasGapsAfterIt() {
        var stream = OriginStream()
        stream.covered(through: 3, epoch: 9)
        #expect(stream.epoch == 9 && stream.through == 3)
        let gap = stream.received(sequence: 7, epoch: 9)
        #expect(gap == .gap(4...6))
        var unseen = OriginStream()
        let first = unseen.received(sequence: 7, epoch: 9)
        #expect(first == .inOrder, "without a sync, a first sight is where it starts")
        unseen.covered(through: 20, epoch: 9)
        #expect(unseen.through == 7, "the origin showed 7: a report of 20 is not believed")
    }

    /// A member's report of an origin's stream is believed no further than the origin's own
    /// word (its heartbeats and updates): a member reporting edge numbers (hostile, in the
    /// simulator's `hostile` fault) made nodes clear losses its sync never brought.
    @Test func aReportBeyondWhatTheOriginShowedCoversNothing() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 1, sequence: 10)
        _ = stream.received(sequence: 12)
        #expect(stream.missing == [11...11] && stream.vouched == 12)
        for lie in [UInt64(13), 1 << 31, WireLimits.maxSequence] {
            #expect(stream.covered(through: lie, epoch: 1) == 0)
            #expect(stream.missing == [11...11] && stream.through == 12)
        }
        #expect(stream.covered(through: 12, epoch: 1) == 12)
        #expect(stream.missing.isEmpty)
    }

    /// A relay's sequence is the relaying member's word, not the origin's: it vouches for no
    /// report. (A member relaying 2^53 - 1, then reporting as much, had its report believed
    /// after a sync with it: losses it never brought were cleared, and reported held.)
    @Test func aRelayVouchesForNoReport() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 7, sequence: 10)
        _ = stream.received(sequence: 12)
        #expect(stream.received(sequence: WireLimits.maxSequence, epoch: 7) == .gap(13...WireLimits.maxSequence - 1))
        #expect(stream.vouched == 12)
        #expect(stream.covered(through: WireLimits.maxSequence, epoch: 7) == 0)
        #expect(stream.contiguousThrough == 10)
        #expect(stream.covered(through: 12, epoch: 7) == 12, "what the origin showed is still covered")
        #expect(stream.missing == [13...WireLimits.maxSequence - 1])
        var relayed = OriginStream()
        #expect(relayed.received(sequence: 40, epoch: 7) == .inOrder)
        #expect(relayed.vouched == 0 && relayed.covered(through: 40, epoch: 7) == 0)
        #expect(relayed.announced(epoch: 7, sequence: 41) == .gap(41...41))
        #expect(relayed.covered(through: 41, epoch: 7) == 41, "once the origin showed it")
    }

    /// A stream first known from a report (a node just started, syncing) cannot be checked
    /// then; the origin's first heartbeat showing less restarts it, so the node syncs with the
    /// origin instead of taking every later update as already held.
    @Test(arguments: [(UInt64(40), UInt64(30), OriginStream.Verdict.gap(31...40)), (40, WireLimits.maxSequence, .restarted), (40, 41, .restarted)])
    func aStreamStartedOnAReportIsCheckedByTheOriginsFirstHeartbeat(announced: UInt64, reported: UInt64, verdict: OriginStream.Verdict) {
        var stream = OriginStream()
        #expect(stream.covered(through: reported, epoch: 5) == reported)
        #expect(stream.reportableThrough == 0, "not passed on in our reports while it is hearsay")
        #expect(stream.announced(epoch: 5, sequence: announced) == verdict)
        #expect(stream.through == announced && stream.vouched == announced)
        #expect(stream.reportableThrough == stream.contiguousThrough)
        #expect(stream.announced(epoch: 5, sequence: announced - 1) == .inOrder, "checked once")
    }

    /// Through 0 too (simulator seeds 3477, 3895: a lying member reported a member's epoch as
    /// 2^48 - 1 through 0; the epoch taken from it was not hearsay, every real heartbeat was
    /// dropped as an older life's, and our reports paired hearing the member directly with the
    /// forged life: the member listed an identity clash). Also after the origin's connection was
    /// re-dialled before its first heartbeat.
    @Test(arguments: [UInt64(9), WireLimits.maxEpoch], [UInt64(40), 0])
    func anEpochKnownOnlyFromAReportGivesWayToTheOriginsOwn(reportedEpoch: UInt64, reportedThrough: UInt64) {
        var stream = OriginStream()
        #expect(stream.covered(through: reportedThrough, epoch: reportedEpoch) == reportedThrough)
        #expect(stream.announced(epoch: 5, sequence: 12) == .restarted)
        #expect(stream.epoch == 5 && stream.through == 12 && stream.reportableThrough == 12)
        #expect(stream.announced(epoch: 5, sequence: 13) == .gap(13...13), "its own life from then on")
        var relayed = OriginStream()
        relayed.covered(through: reportedThrough, epoch: reportedEpoch)
        #expect(relayed.received(sequence: 3, epoch: 5) == .restarted)
        #expect(relayed.epoch == 5 && relayed.through == 3)
        var redialled = OriginStream()
        redialled.covered(through: reportedThrough, epoch: reportedEpoch)
        redialled.connectionLost()
        #expect(redialled.announced(epoch: 5, sequence: 12) == .restarted)
        #expect(redialled.epoch == 5)
    }

    /// A report of the origin's own life through 0, now hearsay too, is confirmed by the
    /// origin's first heartbeat as before: no restart (no sync), and what it published is
    /// missing (the sync covered none of it), repaired as before the change.
    @Test func aReportOfTheOriginsOwnLifeThroughZeroIsConfirmedByItsHeartbeat() {
        var stream = OriginStream()
        #expect(stream.covered(through: 0, epoch: 5) == 0)
        #expect(stream.announced(epoch: 5, sequence: 12) == .gap(1...12))
        #expect(stream.epoch == 5 && stream.through == 12 && stream.reportableThrough == 0)
        #expect(stream.announced(epoch: 5, sequence: 12) == .inOrder)
    }

    @Test func aMemberAheadOfUsShowsWhatWeLack() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 3, sequence: 10)
        #expect(stream.behind(epoch: 3, through: 15) == 11...15)
        #expect(stream.behind(epoch: 3, through: 9) == nil)
        #expect(stream.behind(epoch: 4, through: 99) == nil)
        let check5 = stream.learned(epoch: 3, through: 15) == .gap(11...15)
        #expect(check5)
        #expect(stream.missing == [11...15])
    }

    @Test func aRepairThatFailedIsMissingAgainMergedWithTheRest() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 3, sequence: 1)
        _ = stream.received(sequence: 10)
        _ = stream.received(sequence: 20)
        #expect(stream.missing == [2...9, 11...19])
        let taken = stream.takeRepair(limit: 100)
        #expect(taken == 2...9)
        stream.returnRepair(2...9)
        #expect(stream.missing == [2...9, 11...19])
        _ = stream.takeRepair(limit: 100)
        stream.returnRepair(2...10)
        #expect(stream.missing == [2...19], "overlapping and adjacent ranges merge")
        stream.returnRepair(15...40)
        #expect(stream.missing == [2...20], "never beyond the highest sequence seen")
    }

    /// Sequences near the top of `UInt64` (a bugged or hostile member) never overflow the end
    /// of a repair (it trapped: one member could crash every node that heard it).
    @Test func aRepairNearTheTopOfTheSequenceSpaceDoesNotOverflow() {
        let rows: [(first: UInt64, second: UInt64, repair: ClosedRange<UInt64>)] = [
            (.max - 5, .max, .max - 4 ... .max),
            (.max - 5_000, .max, .max - 4_999 ... .max - 904),
            (1, 5_000, 2...4_097),
        ]
        for row in rows {
            var stream = OriginStream()
            _ = stream.announced(epoch: 3, sequence: row.first)
            _ = stream.announced(epoch: 3, sequence: row.second)
            #expect(stream.takeRepair(limit: 4_096) == row.repair, "\(row.first) then \(row.second)")
        }
    }

    /// After a new incarnation whose epoch is lower (its clock was behind), a member relaying the
    /// old life's updates tags them with the old, higher epoch: that must not take the stream
    /// back to the old life (its heartbeats would then be ignored as stragglers for good).
    @Test func afterANewIncarnationOnlyHeartbeatsMoveTheEpoch() {
        var stream = OriginStream()
        _ = stream.announced(epoch: 7, sequence: 0)
        _ = stream.received(sequence: 1)
        stream.beginIncarnation()
        _ = stream.announced(epoch: 5, sequence: 0)
        #expect(stream.received(sequence: 3, epoch: 7) == .inOrder, "an old life's relay changes nothing")
        #expect(stream.epoch == 5)
        #expect(stream.received(sequence: 2) == .gap(1...1), "the new life's gaps are still seen")
        #expect(stream.announced(epoch: 6, sequence: 2) == .restarted, "its own next life, by heartbeat, still restarts it")
    }
}
