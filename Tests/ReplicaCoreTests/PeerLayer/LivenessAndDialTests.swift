import Foundation
import Testing
@testable import ReplicaCore

/// `Liveness`, `LinkDialer` and `ClockEstimate`: the per-member timers, without sockets or sleeps.
@Suite struct LivenessAndDialTests {
    let start = MonotonicInstant.now
    func at(_ milliseconds: Int) -> MonotonicInstant { start + .milliseconds(milliseconds) }

    @Test func silenceMakesAMemberSuspectThenDown() {
        var liveness = Liveness(now: at(0))
        #expect(liveness.state == .suspect, "known but not heard yet")
        let check1 = liveness.heardDirectly(now: at(100)) == .init(from: .suspect, to: .alive)
        #expect(check1)
        let check2 = liveness.tick(now: at(1500), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == nil
        #expect(check2)
        let check3 = liveness.tick(now: at(1600), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == .init(from: .alive, to: .suspect)
        #expect(check3)
        let check4 = liveness.tick(now: at(5100), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == .init(from: .suspect, to: .down)
        #expect(check4)
        let check5 = liveness.heardDirectly(now: at(6000)) == .init(from: .down, to: .alive)
        #expect(check5)
    }

    @Test func aMemberVouchedForByAnotherStaysAlive() {
        var liveness = Liveness(now: at(0))
        _ = liveness.heardDirectly(now: at(0))
        for t in stride(from: 1000, through: 10_000, by: 1000) {
            _ = liveness.heardIndirectly(now: at(t))
            let check6 = liveness.tick(now: at(t + 500), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == nil
            #expect(check6)
        }
        #expect(liveness.state == .alive)
        #expect(!liveness.hearsDirectly(now: at(10_000), window: .milliseconds(1500)))
    }

    @Test func leftIsKeptUntilANewLife() {
        var liveness = Liveness(now: at(0))
        _ = liveness.heardDirectly(now: at(0))
        let check7 = liveness.left(now: at(10)) == .init(from: .alive, to: .left)
        #expect(check7)
        let check8 = liveness.heardDirectly(now: at(20)) == nil
        #expect(check8, "a straggler does not bring it back")
        let check9 = liveness.tick(now: at(60_000), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == nil
        #expect(check9)
        let check10 = liveness.rejoined(now: at(70_000)) == .init(from: .left, to: .suspect)
        #expect(check10)
    }

    @Test func aStallOfOurOwnIsNotTheMembersSilence() {
        var liveness = Liveness(now: at(0))
        _ = liveness.heardDirectly(now: at(1000))
        liveness.stalled(for: .seconds(30), now: at(31_000))
        let check11 = liveness.tick(now: at(31_500), suspectAfter: .milliseconds(1500), downAfter: .seconds(5)) == nil
        #expect(check11)
        #expect(liveness.state == .alive)
        #expect(liveness.lastHeard == at(1000), "what status shows as LAST SEEN is when it was heard, not the evidence moved")
        _ = liveness.heardDirectly(now: at(32_000))
        #expect(liveness.lastHeard == at(32_000))
    }

    // MARK: Dialling

    let lan = LinkDialer.Timing.adapted(to: nil, silentRedialEvery: .seconds(1))

    @Test func deadlinesAdaptToTheRoundTrip() {
        #expect(lan.connectAttempt == .seconds(1) && lan.handshakeDeadline == .seconds(3))
        let slow = LinkDialer.Timing.adapted(to: .milliseconds(400), silentRedialEvery: .seconds(1))
        #expect(slow.connectAttempt == .milliseconds(1600))
        #expect(slow.handshakeDeadline == .seconds(4))
        #expect(slow.silentRedialEvery == .milliseconds(1600))
        let loopback = LinkDialer.Timing.adapted(to: .milliseconds(1), silentRedialEvery: .seconds(1))
        #expect(loopback.connectAttempt == .milliseconds(250))
    }

    @Test func aConnectThatGetsNoAnswerIsRetried() {
        var dialer = LinkDialer(dialedAt: at(0))
        let check12 = !dialer.shouldRedial(now: at(999), peerSilent: true, timing: lan)
        #expect(check12)
        let check13 = dialer.shouldRedial(now: at(1000), peerSilent: true, timing: lan)
        #expect(check13)
        #expect(dialer.failures == 1)
    }

    /// A slow handshake (CURVE over 200 ms links takes several round trips) is not cut short once
    /// TCP is up: the bug that kept 100 ms links from ever forming a cluster.
    @Test func aSlowHandshakeIsGivenItsTime() {
        var dialer = LinkDialer(dialedAt: at(0))
        dialer.tcpConnected(now: at(400))
        let check14 = !dialer.shouldRedial(now: at(2900), peerSilent: true, timing: lan)
        #expect(check14)
        let check15 = dialer.handshakeSucceeded(now: at(2000)) == .connected
        #expect(check15)
        #expect(dialer.isConnected)
        let check16 = !dialer.shouldRedial(now: at(2500), peerSilent: false, timing: lan)
        #expect(check16)
    }

    /// A handshake cut short for its deadline gets twice as long the next time (up to 8 times),
    /// until one completes: a proxy that accepts at once but delays data by a second each way
    /// made every handshake miss its 3 s, for ever.
    @Test func aHandshakeThatMissesItsDeadlineGetsLongerEachTime() {
        var dialer = LinkDialer(dialedAt: at(0))
        var now = 0
        for deadline in [3_000, 6_000, 12_000, 24_000, 24_000] {
            dialer.tcpConnected(now: at(now))
            let early = dialer.shouldRedial(now: at(now + deadline - 1), peerSilent: true, timing: lan)
            let due = dialer.shouldRedial(now: at(now + deadline), peerSilent: true, timing: lan)
            #expect(!early && due, "a deadline of \(deadline) ms")
            now += deadline
            dialer.dialed(now: at(now))
        }
        dialer.tcpConnected(now: at(now))
        _ = dialer.handshakeSucceeded(now: at(now + 20_000))
        dialer.dialed(now: at(now + 30_000))
        dialer.tcpConnected(now: at(now + 30_000))
        let startedOver = dialer.shouldRedial(now: at(now + 33_000), peerSilent: true, timing: lan)
        #expect(startedOver, "a completed handshake starts over")
    }

    /// A connection that just came up (a slow handshake took its time) gets a moment to deliver
    /// the member's first heartbeat before silence counts against it.
    @Test func aFreshConnectionIsNotJudgedBySilenceAtOnce() {
        var dialer = LinkDialer(dialedAt: at(0))
        dialer.tcpConnected(now: at(400))
        _ = dialer.handshakeSucceeded(now: at(1600))
        let early = dialer.shouldRedial(now: at(2000), peerSilent: true, timing: lan)
        #expect(!early)
        let late = dialer.shouldRedial(now: at(3600), peerSilent: true, timing: lan)
        #expect(late)
    }

    @Test func aConnectedSocketToASilentPeerIsRedialledNoOftenerThanItsInterval() {
        var dialer = LinkDialer(dialedAt: at(0))
        _ = dialer.handshakeSucceeded(now: at(10))
        let check17 = !dialer.shouldRedial(now: at(999), peerSilent: true, timing: lan)
        #expect(check17)
        let check18 = dialer.shouldRedial(now: at(2010), peerSilent: true, timing: lan)
        #expect(check18)
        dialer.dialed(now: at(2010))
        let check19 = dialer.handshakeSucceeded(now: at(2020)) == .reconnected
        #expect(check19)
    }

    @Test func aConnectMeasuresTheRoundTripBeforeAnyEcho() {
        var dialer = LinkDialer(dialedAt: at(0))
        #expect(dialer.connectRoundTrip == nil)
        dialer.tcpConnected(now: at(3))
        #expect(dialer.connectRoundTrip == .milliseconds(3))
        let timing = LinkDialer.Timing.adapted(to: dialer.connectRoundTrip, silentRedialEvery: .seconds(1))
        #expect(timing.connectAttempt == .milliseconds(250), "a partition right after start-up is re-dialled 4 times a second, not once")
        var late = LinkDialer(dialedAt: at(0))
        late.tcpConnected(now: at(1_003))
        #expect(late.connectRoundTrip == nil, "a connect that took a SYN resend is no round trip")
    }

    @Test func lostConnectionsBackOffDoubling() {
        var dialer = LinkDialer(dialedAt: at(0))
        _ = dialer.handshakeSucceeded(now: at(10))
        dialer.disconnected(now: at(100), timing: lan)
        let check20 = !dialer.shouldRedial(now: at(299), peerSilent: true, timing: lan)
        #expect(check20)
        let check21 = dialer.shouldRedial(now: at(300), peerSilent: true, timing: lan)
        #expect(check21)
        dialer.dialed(now: at(300))
        let connectAttemptExpired = dialer.shouldRedial(now: at(1300), peerSilent: true, timing: lan)
        #expect(connectAttemptExpired)
        dialer.dialed(now: at(1300))
        dialer.tcpConnected(now: at(1301))
        dialer.disconnected(now: at(1400), timing: lan)
        let check22 = !dialer.shouldRedial(now: at(1899), peerSilent: true, timing: lan)
        #expect(check22, "third failure: 800 ms, capped at 500 ms")
        let check23 = dialer.shouldRedial(now: at(1900), peerSilent: true, timing: lan)
        #expect(check23)
    }

    // MARK: Clocks

    struct EchoRow: Sendable, CustomTestStringConvertible {
        var name: String
        var t1: UInt64, held: UInt32, t3: UInt64, t4: UInt64
        var roundTrip: Int64?, offset: Int64?
        var testDescription: String { name }
    }

    static let echoes: [EchoRow] = [
        EchoRow(name: "same clocks, 10 ms each way", t1: 1_000, held: 500, t3: 1_510, t4: 1_520, roundTrip: 20, offset: 0),
        EchoRow(name: "peer 120 s ahead", t1: 1_000, held: 500, t3: 121_510, t4: 1_520, roundTrip: 20, offset: 120_000),
        EchoRow(name: "peer 5 s behind, 200 ms each way", t1: 10_000, held: 300, t3: 5_500, t4: 10_700, roundTrip: 400, offset: -5_000),
        EchoRow(name: "no echo yet", t1: 0, held: 0, t3: 5, t4: 10, roundTrip: nil, offset: nil),
        EchoRow(name: "our clock stepped back: impossible", t1: 10_000, held: 0, t3: 10_000, t4: 9_000, roundTrip: nil, offset: nil),
        // A member's arbitrary 64-bit clock used to trap in the signed arithmetic.
        EchoRow(name: "a wall clock beyond 48 bits is not a clock", t1: 1_000, held: 0, t3: .max, t4: 1_020, roundTrip: nil, offset: nil),
        EchoRow(name: "nor one near 2^62", t1: 1_000, held: 0, t3: 1 << 62, t4: 1_020, roundTrip: nil, offset: nil),
    ]

    @Test(arguments: echoes) func echoesGiveRoundTripAndOffset(_ row: EchoRow) {
        var estimate = ClockEstimate()
        estimate.record(echoedWallMillis: row.t1, heldMillis: row.held, peerWallMillis: row.t3, receivedWallMillis: row.t4)
        #expect(estimate.samples.first?.roundTripMillis == row.roundTrip)
        #expect(estimate.offsetMillis == row.offset)
    }

    @Test func theOffsetComesFromTheQuickestRecentExchange() {
        var estimate = ClockEstimate()
        // A queued heartbeat inflates the round trip and skews the offset; the quick one is trusted.
        estimate.record(echoedWallMillis: 1_000, heldMillis: 0, peerWallMillis: 1_900, receivedWallMillis: 2_000)
        estimate.record(echoedWallMillis: 3_000, heldMillis: 0, peerWallMillis: 3_005, receivedWallMillis: 3_010)
        #expect(estimate.offsetMillis == 0)
        #expect(estimate.worstRoundTrip == .milliseconds(1000))
        for t: UInt64 in 1...ClockEstimate.keep.asUInt64 {
            estimate.record(echoedWallMillis: 10_000 * t, heldMillis: 0, peerWallMillis: 10_000 * t + 5, receivedWallMillis: 10_000 * t + 10)
        }
        #expect(estimate.worstRoundTrip == .milliseconds(10), "old samples age out")
    }

    @Test func echoesOfHeartbeatsSentBeforeAStallAreNotMeasured() {
        var estimate = ClockEstimate()
        estimate.record(echoedWallMillis: 1_000, heldMillis: 0, peerWallMillis: 1_005, receivedWallMillis: 1_010)
        // Stopped from 1,500 to 7,500: the member's heartbeats echoing 1,400 waited in our queue.
        estimate.ignoreEchoes(sentBefore: 7_500)
        let queued = estimate.record(echoedWallMillis: 1_400, heldMillis: 5_000, peerWallMillis: 6_405, receivedWallMillis: 7_501)
        #expect(!queued)
        #expect(estimate.worstRoundTrip == .milliseconds(10), "the stall is not a round trip")
        let fresh = estimate.record(echoedWallMillis: 7_600, heldMillis: 100, peerWallMillis: 7_705, receivedWallMillis: 7_710)
        #expect(fresh)
        #expect(estimate.worstRoundTrip == .milliseconds(10))
    }
}

private extension Int {
    var asUInt64: UInt64 { UInt64(self) }
}
