import Foundation
import PropertyBased
import Testing
@testable import ReplicaCore

/// Numbers a peer sends, at the edges of what they can hold: the codec refuses what no real node
/// sends, and nothing the codec lets through makes the peer layer trap (a heartbeat with
/// sequence 2^64 - 1 crashed a node at its next `status`).
@Suite struct PeerNumberBoundsTests {
    /// The values of the issue that found the crash, and the bounds on both sides.
    static let edges: [UInt64] = [
        0, 1, 2, 1 << 31, (1 << 48) - 2, (1 << 48) - 1, 1 << 48, (1 << 48) + 1, WireLimits.maxSequence - 1, WireLimits.maxSequence,
        WireLimits.maxSequence + 1, 1 << 63, (1 << 63) + 1, .max - 1, .max,
    ]
    static let edge = Gen.int(in: 0...(edges.count - 1)).map { edges[$0] }
    static let codec = WireCodec()
    static let start = MonotonicInstant.now
    static let record = MemberRecord(node: "b", epoch: 7, incarnation: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2)),
                                     status: .active, address: Endpoint(host: "127.0.0.1", port: 7000), publicKey: nil)
    static let timing = PeerTiming(heartbeatInterval: .seconds(1), suspectAfter: .milliseconds(1500), downAfter: .seconds(5), requestTimeout: .seconds(10))

    /// What the codec lets through is within the documented bounds; the rest is malformed.
    @Test(arguments: edges) func theCodecBoundsSequencesAndEpochs(_ value: UInt64) throws {
        let entry = Entry(key: "k", version: Version(timestamp: HybridTimestamp(wallMillis: 1, logical: 0), node: "b"), schema: 0, payload: [1])
        let sequenceOK = value >= 1 && value <= WireLimits.maxSequence
        let epochOK = value <= WireLimits.maxEpoch
        func decodes(_ message: WireMessage) -> Bool { (try? Self.codec.decode(Self.codec.encode(message))) == message }
        #expect(decodes(.update(Update(origin: "b", sequence: value, entry: entry))) == sequenceOK)
        #expect(decodes(.relay(RelayedUpdate(origin: "c", source: "b", sourceEpoch: 5, sequence: value, entry: entry))) == sequenceOK)
        #expect(decodes(.relay(RelayedUpdate(origin: "c", source: "b", sourceEpoch: value, sequence: 5, entry: entry))) == epochOK)
        #expect(decodes(.updates(UpdateBatch(origin: "b", firstSequence: value, entries: [entry, entry]))) == (sequenceOK && value < WireLimits.maxSequence))
        let report = PeerReport(node: "c", epoch: value, through: value, echoWallMillis: 1, heldMillis: 1, hearsDirectly: true)
        let heartbeat = Heartbeat(origin: "b", incarnation: Self.record.incarnation, epoch: value, sequence: value, timestamp: .zero,
                                  digestRoot: value, entryCount: value, membersDigest: value, storeSerial: value, reports: [report])
        #expect(decodes(.heartbeat(heartbeat)) == (value <= WireLimits.maxEpoch))
        #expect(decodes(.repairRequest(RepairRequest(origin: "b", requestID: value, first: 1, last: value))) == sequenceOK)
        let chunk = SyncChunk(origin: "b", requestID: value, index: 0, isLast: true, isUnavailable: false,
                              mark: StoreMark(epoch: value, serial: value), sequence: value, entries: [])
        #expect(decodes(.syncChunk(chunk)) == epochOK)
        var member = Self.record
        member.epoch = value
        #expect(decodes(.members(MembersMessage(origin: "b", wantsReply: false, records: [member]))) == epochOK)
    }

    /// Whatever a member's messages carry within those bounds, in any order, the session's
    /// arithmetic (gaps, repairs, held-through, missing counts, clock samples) never traps, and
    /// what status reads stays an `Int`.
    @Test func aSessionFedEdgeNumbersNeverTraps() async {
        let event = Gen.int(in: 0...7)
        await propertyCheck(count: 400, input: event.array(of: 12), Self.edge.array(of: 12), Self.edge.array(of: 12)) { kinds, firsts, seconds in
            var session = PeerSession(record: Self.record, now: Self.start)
            let local = PeerSession.LocalView(node: "a", digestRoot: 1, membersDigest: 0, syncing: false)
            for (step, kind) in kinds.enumerated() {
                let now = Self.start + .milliseconds(100 * step)
                let (a, b) = (min(firsts[step], WireLimits.maxSequence), min(seconds[step], WireLimits.maxEpoch))
                switch kind {
                case 0:
                    let report = PeerReport(node: "a", epoch: b, through: a, echoWallMillis: b, heldMillis: UInt32(truncatingIfNeeded: a), hearsDirectly: true)
                    let heartbeat = Heartbeat(origin: "b", incarnation: Self.record.incarnation, epoch: b, sequence: a, timestamp: .zero,
                                              wallMillis: b, digestRoot: 2, entryCount: a, storeSerial: a, reports: [report])
                    _ = session.heartbeatReceived(heartbeat, local: local, now: now, wallMillis: b)
                case 1: _ = session.updatesReceived(max(a, 1)...max(a, 1), now: now)
                case 2: _ = session.relayReceived(sequence: max(a, 1), epoch: b, now: now, base: Self.timing)
                case 3: session.covered(through: a, epoch: b)
                case 4: session.heldElsewhere(epoch: b, through: a)
                case 5:
                    for action in session.tick(now: now, base: Self.timing, holdRepairs: false) {
                        if case .requestRepair(let range) = action { session.repairStarted(requestID: 1, range: range, now: now) }
                    }
                case 6: _ = session.repairChunk(requestID: 1, entries: 0, isLast: true, isUnavailable: a % 2 == 0, now: now)
                default: session.syncCompleted(mark: StoreMark(epoch: b, serial: a), sequence: a, askedInFull: false)
                }
                _ = Int(clamping: session.stream.missingCount.addingSaturated(session.repair.map { OriginStream.length(of: $0.range) } ?? 0))
                _ = session.heldThrough
            }
        }
    }

    @Test func rangeLengthsSaturate() {
        #expect(OriginStream.length(of: 0...UInt64.max) == .max)
        #expect(OriginStream.length(of: 1...UInt64.max) == .max)
        #expect(OriginStream.length(of: 5...5) == 1)
        #expect(UInt64.max.addingSaturated(1) == .max && Int64.min.subtractingSaturated(1) == .min && UInt64(3).subtractingSaturated(4) == 0)
        #expect(Int64.max.multipliedSaturated(by: -2) == .min && UInt64(1 << 40).multipliedSaturated(by: 1 << 40) == .max)
    }

    // MARK: Claims a member does not back

    /// A heartbeat claiming a billion updates more than the member published: one repair is
    /// asked, answered "no longer held", and everything else missing goes to the same catch-up
    /// (it asked again and again, 4,096 at a time: ~115 requests a second for the rest of the
    /// epoch). A member that keeps claiming what it does not serve is chased after a back-off
    /// that doubles, and listed; a repair it serves ends that.
    @Test func unservedClaimsAreChasedOncePerBackOffAndListed() {
        var session = PeerSession(record: Self.record, now: Self.start)
        session.connectDealer(now: Self.start)
        session.subscriberTCPConnected(now: Self.start)
        session.subscriberHandshakeSucceeded(now: Self.start)
        let local = PeerSession.LocalView(node: "a", digestRoot: 1, membersDigest: 0, syncing: false)
        var claim: UInt64 = 10
        var time = 0
        func heartbeat() {
            time += 500
            let message = Heartbeat(origin: "b", incarnation: Self.record.incarnation, epoch: 7, sequence: claim, timestamp: .zero, digestRoot: 1, entryCount: 0)
            _ = session.heartbeatReceived(message, local: local, now: Self.start + .milliseconds(time), wallMillis: 0)
        }
        func tick() -> [PeerSession.Action] { session.tick(now: Self.start + .milliseconds(time), base: Self.timing, holdRepairs: false) }
        func answerUnavailable() -> PeerSession.RepairVerdict {
            guard case .requestRepair(let range)? = tick().last else { return .unrelated }
            session.repairStarted(requestID: UInt64(time), range: range, now: Self.start + .milliseconds(time))
            return session.repairChunk(requestID: UInt64(time), entries: 0, isLast: true, isUnavailable: true, now: Self.start + .milliseconds(time))
        }
        heartbeat()
        session.covered(through: 10, epoch: 7)
        claim = 1_000_000_010
        heartbeat()
        #expect(answerUnavailable() == .unavailable, "the first: a catch-up at once")
        #expect(session.stream.missing.isEmpty, "nothing more is asked of this claim")
        #expect(session.stream.missingCount == 0)
        #expect(tick().isEmpty)
        claim += 1_000_000_000
        heartbeat()
        #expect(answerUnavailable() == .unavailableDeferred)
        #expect(!tick().contains(.wantSync(.repairUnavailable)), "not before a second")
        time += 1_000
        #expect(tick().contains(.wantSync(.repairUnavailable)), "after it")
        #expect(session.claimsUnserved == nil, "not listed after two")
        claim += 1_000_000_000
        heartbeat()
        #expect(answerUnavailable() == .unavailableDeferred)
        #expect(session.claimsUnserved != nil, "listed after three in a row")
        time += 1_999
        #expect(!tick().contains(.wantSync(.repairUnavailable)), "two seconds now")
        time += 1
        #expect(tick().contains(.wantSync(.repairUnavailable)))
        #expect(PeerSession.unservedCatchUpWait(afterUnserved: 40) == .seconds(64), "at most a minute apart")

        claim += 5
        heartbeat()
        guard case .requestRepair(let range)? = tick().last else {
            Issue.record("a repair of the new gap")
            return
        }
        session.repairStarted(requestID: 99, range: range, now: Self.start + .milliseconds(time))
        #expect(session.repairChunk(requestID: 99, entries: 5, isLast: true, isUnavailable: false, now: Self.start + .milliseconds(time)) == .completed)
        #expect(session.claimsUnserved == nil && session.unservedRepairs == 0, "a served repair ends it")
    }

    /// A relay naming another life of a member we hear directly moves nothing: the member's own
    /// heartbeats say which life it is in. (A relay could lock the stream onto an epoch the
    /// member never had, and its real heartbeats were then ignored as an older life's.)
    @Test func aRelayCannotMoveTheLifeOfAMemberHeardDirectly() {
        var session = PeerSession(record: Self.record, now: Self.start)
        let local = PeerSession.LocalView(node: "a", digestRoot: 1, membersDigest: 0, syncing: false)
        let heartbeat = Heartbeat(origin: "b", incarnation: Self.record.incarnation, epoch: 7, sequence: 3, timestamp: .zero, digestRoot: 1, entryCount: 0)
        _ = session.heartbeatReceived(heartbeat, local: local, now: Self.start, wallMillis: 0)
        #expect(session.relayReceived(sequence: 1, epoch: WireLimits.maxEpoch, now: Self.start + .milliseconds(100), base: Self.timing).isEmpty)
        #expect(session.stream.epoch == 7)
        _ = session.relayReceived(sequence: 4, epoch: 7, now: Self.start + .milliseconds(100), base: Self.timing)
        #expect(session.stream.through == 4, "a relay of its current life counts")
        let later = Self.start + .seconds(3)
        #expect(session.relayReceived(sequence: 1, epoch: 9, now: later, base: Self.timing).contains(.wantSync(.peerRestarted)),
                "once it is not heard directly, a relay says it restarted")
        #expect(session.stream.epoch == 9)
    }
}
