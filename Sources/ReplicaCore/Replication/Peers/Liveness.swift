import Foundation

/// How a member looks from this node. `alive`, `suspect` and `down` are judged here, from what
/// this node hears; `left` is what the member announced (and gossip spread).
public enum PeerState: String, Sendable, Codable, CaseIterable {
    /// Heard, directly or through a member that hears it, within the suspect time.
    case alive
    /// Silent for the suspect time (or not heard yet since it became known).
    case suspect
    /// Silent for the down time: still dialled, in case it returns.
    case down
    /// It left the cluster (`replica-node leave`): no longer dialled.
    case left
}

/// One member's liveness, from direct evidence (any message on its own connections) and
/// indirect evidence (a member we hear says, in its heartbeat, that it hears this one). Indirect
/// evidence is SWIM's indirect probe, carried by heartbeats that are sent anyway: a member that
/// only we cannot reach (a partial partition) stays `alive`, and no suspicion needs refuting.
struct Liveness: Equatable, Sendable {
    private(set) var state: PeerState = .suspect
    /// When `state` last changed (monotonic) and the same moment on the wall clock, for status.
    private(set) var since: MonotonicInstant
    private(set) var sinceDate: Date
    /// When we last heard the member itself, and when a member we hear last vouched for it.
    private(set) var lastDirect: MonotonicInstant?
    private(set) var lastIndirect: MonotonicInstant?
    /// When we last heard the member itself, as it happened: `lastDirect` is evidence, moved
    /// forward by a stall of this node (`stalled`), and `status` showing it said a member frozen
    /// 18 s was last heard 8.5 s ago. This is what `LAST SEEN` shows.
    private(set) var lastHeard: MonotonicInstant?
    /// When this node learned of the member: silence is counted from here until first heard.
    private var known: MonotonicInstant

    init(now: MonotonicInstant, date: Date = Date()) {
        since = now
        sinceDate = date
        known = now
    }

    /// A transition, for logs and metrics.
    struct Transition: Equatable, Sendable {
        var from: PeerState
        var to: PeerState
    }

    /// Heard within `window` on its own connections.
    func hearsDirectly(now: MonotonicInstant, window: Duration) -> Bool {
        lastDirect.map { now - $0 < window } ?? false
    }

    /// Not heard on its own connections for `window`, counting from when it became known: a
    /// member just learnt of is given the same time to be heard as one that was heard.
    func silentDirectly(now: MonotonicInstant, window: Duration) -> Bool {
        now - (lastDirect ?? known) >= window
    }

    mutating func heardDirectly(now: MonotonicInstant) -> Transition? {
        lastDirect = now
        lastHeard = now
        return move(to: .alive, now: now)
    }

    mutating func heardIndirectly(now: MonotonicInstant) -> Transition? {
        lastIndirect = now
        return move(to: .alive, now: now)
    }

    /// Ages the evidence: `suspect` after `suspectAfter` of silence, `down` after `downAfter`.
    mutating func tick(now: MonotonicInstant, suspectAfter: Duration, downAfter: Duration) -> Transition? {
        guard state != .left else { return nil }
        let last = [lastDirect, lastIndirect, known].compactMap { $0 }.max() ?? known
        let silence = now - last
        if silence >= downAfter { return move(to: .down, now: now) }
        if silence >= suspectAfter && state == .alive { return move(to: .suspect, now: now) }
        return nil
    }

    /// The member announced its departure (or a new life of it replaced a departed one).
    mutating func left(now: MonotonicInstant) -> Transition? { move(to: .left, now: now) }

    mutating func rejoined(now: MonotonicInstant) -> Transition? {
        guard state == .left else { return nil }
        known = now
        lastDirect = nil
        lastIndirect = nil
        lastHeard = nil
        return move(to: .suspect, now: now)
    }

    /// This node itself was stalled (stopped, starved) for `gap`: what it did not hear then is
    /// not the members' silence, so the evidence is moved forward by the stall (`lastHeard`,
    /// what happened, is not).
    mutating func stalled(for gap: Duration, now: MonotonicInstant) {
        lastDirect = lastDirect.map { min($0 + gap, now) }
        lastIndirect = lastIndirect.map { min($0 + gap, now) }
        known = min(known + gap, now)
    }

    private mutating func move(to new: PeerState, now: MonotonicInstant) -> Transition? {
        guard state != new, state != .left || new == .suspect else { return nil }
        let transition = Transition(from: state, to: new)
        state = new
        since = now
        sinceDate = Date()
        return transition
    }
}
