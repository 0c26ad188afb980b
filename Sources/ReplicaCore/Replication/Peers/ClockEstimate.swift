/// A peer's round trip and clock offset, from heartbeat echoes (NTP's on-wire method).
///
/// Our heartbeat carries our wall clock `t1`; the peer's next heartbeat echoes `t1`, says how
/// long it held it (`held` = t3 - t2, on its own monotonic clock) and carries its wall clock
/// `t3`; we receive it at `t4`. Then round trip = (t4 - t1) - held, and the peer's clock minus
/// ours = ((t2 - t1) + (t3 - t4)) / 2. Of the last few samples, the one with the shortest round
/// trip gives the offset (queueing delay inflates round trip and error alike, as in NTP's clock
/// filter); the round trip itself is smoothed as TCP does.
struct ClockEstimate: Equatable, Sendable {
    struct Sample: Equatable, Sendable {
        var roundTripMillis: Int64
        var offsetMillis: Int64
    }

    private(set) var samples: [Sample] = []
    /// Smoothed round trip in milliseconds (nil before the first sample).
    private(set) var smoothedRoundTripMillis: Double?
    static let keep = 8
    /// Echoes of our heartbeats sent before this wall time are not measured: this node was
    /// stalled since (they waited in its queue), or its wall clock was stepped. A round trip of
    /// the stall's length, or of the step's, would stretch every dial and suspect deadline for
    /// the member.
    private(set) var measuresEchoesFrom: UInt64 = 0

    /// Records one echo; returns false (and keeps nothing) for an impossible sample, e.g. when a
    /// wall clock stepped between the two heartbeats.
    @discardableResult
    mutating func record(echoedWallMillis t1: UInt64, heldMillis: UInt32, peerWallMillis t3: UInt64, receivedWallMillis t4: UInt64) -> Bool {
        // Wall clocks beyond 48 bits (year 10889) are not clocks: refusing them also keeps the
        // signed arithmetic below from overflowing on a member's arbitrary 64-bit values.
        let limit = HybridTimestamp.maxWallMillis
        guard t1 > 0, t1 >= measuresEchoesFrom, t3 > 0, t4 >= t1, t3 <= limit, t4 <= limit else { return false }
        let roundTrip = Int64(t4 - t1) - Int64(heldMillis)
        guard roundTrip >= 0, roundTrip < 60_000 else { return false }
        let t2 = Int64(t3) - Int64(heldMillis)
        let offset = ((t2 - Int64(t1)) + (Int64(t3) - Int64(t4))) / 2
        samples.append(Sample(roundTripMillis: roundTrip, offsetMillis: offset))
        if samples.count > Self.keep { samples.removeFirst(samples.count - Self.keep) }
        smoothedRoundTripMillis = smoothedRoundTripMillis.map { 0.875 * $0 + 0.125 * Double(roundTrip) } ?? Double(roundTrip)
        return true
    }

    /// This node was stalled, or its wall clock stepped, until `wallMillis`: echoes of heartbeats
    /// sent before are not samples.
    mutating func ignoreEchoes(sentBefore wallMillis: UInt64) {
        measuresEchoesFrom = max(measuresEchoesFrom, wallMillis)
    }

    /// The peer's clock minus ours, from the sample with the shortest round trip.
    var offsetMillis: Int64? {
        samples.min { $0.roundTripMillis < $1.roundTripMillis }?.offsetMillis
    }

    /// The smoothed round trip, or nil before any sample.
    var roundTrip: Duration? {
        smoothedRoundTripMillis.map { .milliseconds(Int64($0.rounded(.up))) }
    }

    /// The worst recent round trip: what timeouts must allow for.
    var worstRoundTrip: Duration? {
        samples.map(\.roundTripMillis).max().map { .milliseconds($0) }
    }
}
