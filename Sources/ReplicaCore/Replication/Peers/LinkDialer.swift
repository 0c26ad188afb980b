/// When to (re)dial one connecting socket (a SUB or DEALER to a member, or a DEALER to a seed).
///
/// libzmq's own reconnection is off (a libzmq 4.3 defect, see `ZMQSocket.setClusterConnectionOptions`),
/// so the owner re-dials. A dial goes through three phases, each with its own deadline, so that a
/// slow link is never cut short and a dead one is retried soon:
/// - `connecting`: the TCP connect. It takes one round trip; a partition drops it silently, so it
///   is retried after `connectAttempt` (a small multiple of the measured round trip).
/// - `handshaking`: TCP is up, the ZMTP (and CURVE) handshake runs: several round trips, so
///   `handshakeDeadline` is generous. A stopped peer's kernel accepts TCP and then nothing comes.
/// - `connected`: until the connection is lost, or the peer falls silent while the connection
///   looks up (a partition leaves TCP established but dead): then re-dialled every
///   `silentRedialEvery`, which gives a fresh TCP connection.
/// A lost connection waits a back-off that doubles with each consecutive failure.
struct LinkDialer: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        case connecting(since: MonotonicInstant)
        case handshaking(since: MonotonicInstant)
        case connected(since: MonotonicInstant)
        case waiting(until: MonotonicInstant)
    }

    struct Timing: Equatable, Sendable {
        var connectAttempt: Duration
        var handshakeDeadline: Duration
        var silentRedialEvery: Duration
        /// A connection that just came up is not judged by the member's silence before this:
        /// its first heartbeat may be a heartbeat interval and a one-way trip away.
        var freshConnectionGrace: Duration = .seconds(2)
        var backoffBase: Duration = .milliseconds(100)
        /// Low, because a partition piles up failures and the cap is then how long a healed link
        /// waits for its next dial; an attempt to a dead host costs one SYN.
        var backoffCap: Duration = .milliseconds(500)

        /// Deadlines for a link whose worst recent round trip is `roundTrip` (nil: not measured).
        /// A LAN gets 0.25 s connect attempts (a connect there takes one round trip, and a healed
        /// partition is found by the next fresh SYN, not by the kernel's 1 s SYN retry); a 400 ms
        /// round trip gets 1.6 s, and a handshake of ten round trips.
        static func adapted(to roundTrip: Duration?, silentRedialEvery: Duration) -> Timing {
            let trip = roundTrip ?? LinkDialer.unmeasuredRoundTrip
            return Timing(
                connectAttempt: max(.milliseconds(250), trip * 4),
                handshakeDeadline: max(.seconds(3), trip * 10),
                silentRedialEvery: max(silentRedialEvery, trip * 4),
                freshConnectionGrace: max(.seconds(2), trip * 8))
        }
    }

    /// The round trip assumed before one is measured.
    static let unmeasuredRoundTrip: Duration = .milliseconds(250)

    private(set) var phase: Phase
    private(set) var lastDial: MonotonicInstant
    /// Consecutive dials that did not reach `connected`.
    private(set) var failures = 0
    /// Completed handshakes over the socket's life.
    private(set) var handshakes = 0
    /// Handshakes cut short in a row for taking longer than the deadline: each doubles the next
    /// one's deadline, up to 8 times. The deadline comes from the round trip, which before any
    /// echo is only the TCP connect's: behind a proxy that accepts at once but carries data with
    /// a second's delay, a handshake of a few round trips never fit in 3 s, and the link never
    /// formed.
    private(set) var slowHandshakes = 0
    /// The connection was lost (or re-dialled) since the last completed handshake.
    private(set) var interrupted = false
    /// How long the last TCP connect took: about one round trip, known before any heartbeat
    /// echo has measured one (a partition right after start-up leaves only this).
    private(set) var connectRoundTrip: Duration?

    init(dialedAt now: MonotonicInstant) {
        phase = .connecting(since: now)
        lastDial = now
    }

    var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Connected, and the handshake completed less than `window` ago: the connection is fresh
    /// proof of a path to the member even before its next heartbeat arrives.
    func connectedRecently(now: MonotonicInstant, window: Duration) -> Bool {
        if case .connected(let since) = phase { return now - since < window }
        return false
    }

    /// The owner dialled (again): a fresh TCP connection is on its way.
    mutating func dialed(now: MonotonicInstant) {
        if isConnected || handshakes > 0 { interrupted = true }
        phase = .connecting(since: now)
        lastDial = now
    }

    /// What a monitor event means for the owner.
    enum Outcome: Equatable, Sendable {
        case none
        /// The first handshake of this socket completed.
        case connected
        /// A handshake completed after the connection had been lost or re-dialled.
        case reconnected
    }

    mutating func tcpConnected(now: MonotonicInstant) {
        if case .connecting(let since) = phase {
            phase = .handshaking(since: now)
            // A connect slower than the default guess says more about a lost SYN (the kernel
            // resends it after 1 s) or a busy loop than about the round trip: not kept.
            let took = now - since
            if took < Self.unmeasuredRoundTrip { connectRoundTrip = took }
        }
    }

    mutating func handshakeSucceeded(now: MonotonicInstant) -> Outcome {
        phase = .connected(since: now)
        failures = 0
        slowHandshakes = 0
        handshakes += 1
        defer { interrupted = false }
        return handshakes == 1 ? .connected : (interrupted ? .reconnected : .none)
    }

    mutating func disconnected(now: MonotonicInstant, timing: Timing) {
        interrupted = true
        failures += 1
        phase = .waiting(until: now + backoff(timing))
    }

    /// Whether to re-dial now. `peerSilent`: the member has not been heard for its suspect time.
    mutating func shouldRedial(now: MonotonicInstant, peerSilent: Bool, timing: Timing) -> Bool {
        switch phase {
        case .connecting(let since):
            if now - since >= timing.connectAttempt { failures += 1; return true }
        case .handshaking(let since):
            if now - since >= timing.handshakeDeadline * (1 << min(slowHandshakes, 3)) {
                failures += 1
                slowHandshakes += 1
                return true
            }
        case .connected(let since):
            if peerSilent && now - lastDial >= timing.silentRedialEvery && now - since >= timing.freshConnectionGrace { return true }
        case .waiting(let until):
            if now >= until { return true }
        }
        return false
    }

    private func backoff(_ timing: Timing) -> Duration {
        let exponent = min(failures, 8)
        return min(timing.backoffCap, timing.backoffBase * (1 << exponent))
    }
}
