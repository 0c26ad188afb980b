import Foundation

/// A hybrid logical clock (Kulkarni et al., 2014): timestamps close to wall-clock time that
/// still respect causality. A node that has seen a timestamp stamps its later events above it,
/// even when its own wall clock is behind, so clock skew cannot make a causally later write lose.
///
/// A value type: the replica actor owns one and mutates it in place.
public struct HybridLogicalClock: Sendable {
    /// Wall-clock milliseconds since the Unix epoch.
    public typealias PhysicalClock = @Sendable () -> UInt64

    public static let systemClock: PhysicalClock = {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// Why a remote timestamp was not accepted.
    public enum RejectedTimestamp: Error, Equatable, Sendable {
        /// The remote clock is more than `maxDrift` ahead of ours.
        case tooFarInFuture(remote: HybridTimestamp, localWallMillis: UInt64)
    }

    public private(set) var last: HybridTimestamp
    /// How far (in milliseconds) a remote timestamp may be ahead of our wall clock.
    public let maxDriftMillis: UInt64
    /// Extra room ahead, when our wall clock is known to be behind the cluster's (see `ClockCheck`).
    public var extraDriftMillis: UInt64 = 0
    private let physical: PhysicalClock

    public init(
        maxDriftMillis: UInt64 = 60_000,
        startingAfter floor: HybridTimestamp = .zero,
        physical: @escaping PhysicalClock = HybridLogicalClock.systemClock
    ) {
        self.maxDriftMillis = maxDriftMillis
        self.physical = physical
        self.last = floor
    }

    /// A timestamp for a local event (a write or a send):
    /// `l' = l; l = max(l', pt); c = (l == l') ? c + 1 : 0`.
    public mutating func tick() -> HybridTimestamp {
        let now = min(physical(), HybridTimestamp.maxWallMillis)
        if now > last.wallMillis {
            last = HybridTimestamp(wallMillis: now, logical: 0)
        } else {
            last = Self.increment(last)
        }
        return last
    }

    /// Merges a received timestamp: `l = max(l', m.l)`, and `c` is `max(c, m.c) + 1` if
    /// `l == l' == m.l`, `c + 1` if `l == l'`, else `m.c + 1`.
    ///
    /// Unlike the textbook rule, the wall clock takes no part here: the next local event
    /// (`tick`) takes it in anyway, and so a wrong wall clock enters the clock only through a
    /// local write, which a node whose clock is known wrong refuses (`ClockCheck`). (With the
    /// textbook `max(l', m.l, pt)`, a node 120 s ahead would carry 120 s into its clock from
    /// every entry it received, and stamp its writes that far ahead after its clock was fixed.)
    /// A timestamp more than `maxDriftMillis` ahead of our wall clock is rejected and leaves the
    /// clock untouched: one bad clock must not drag the whole cluster into the future.
    @discardableResult
    public mutating func receive(_ remote: HybridTimestamp) throws(RejectedTimestamp) -> HybridTimestamp {
        try receive(remote, wallMillis: physical())
    }

    /// The latest wall time (ms) of a received timestamp this clock takes when its own wall
    /// clock reads `wallMillis`: the drift allowed, and the allowance a slow clock gets.
    public func acceptsThrough(wallMillis: UInt64) -> UInt64 { wallMillis &+ maxDriftMillis &+ extraDriftMillis }

    /// `receive` against a wall-clock reading the caller took (one reading for a whole batch
    /// of received timestamps: reading the clock per entry would cost more than the merge).
    @discardableResult
    public mutating func receive(_ remote: HybridTimestamp, wallMillis: UInt64) throws(RejectedTimestamp) -> HybridTimestamp {
        let now = min(wallMillis, HybridTimestamp.maxWallMillis)
        guard remote.wallMillis <= acceptsThrough(wallMillis: now) else {
            throw .tooFarInFuture(remote: remote, localWallMillis: now)
        }
        let previous = last
        if previous.wallMillis == remote.wallMillis {
            last = Self.increment(HybridTimestamp(wallMillis: previous.wallMillis, logical: max(previous.logical, remote.logical)))
        } else if previous.wallMillis > remote.wallMillis {
            last = Self.increment(previous)
        } else {
            last = Self.increment(remote)
        }
        return last
    }

    /// The wall clock now (ms since 1970), as this clock reads it.
    public func wallMillis() -> UInt64 { physical() }

    /// The least timestamp the next local event can carry (`last` plus one), without advancing
    /// the clock: whatever the wall clock does, every later `tick` is at or above it. Heartbeats
    /// carry it (they are not data, and must never push the clock ahead).
    public var leastNext: HybridTimestamp {
        HybridTimestamp(rawValue: last.rawValue == .max ? .max : last.rawValue + 1)
    }

    /// Raises the clock to at least `timestamp` (used at start-up with the highest stored version),
    /// so a restarted node never stamps below what it already wrote.
    public mutating func advance(toAtLeast timestamp: HybridTimestamp) {
        if timestamp > last { last = timestamp }
    }

    /// The next timestamp after `t`; a full logical counter carries into the millisecond field,
    /// which keeps timestamps strictly increasing at any write rate.
    private static func increment(_ t: HybridTimestamp) -> HybridTimestamp {
        t.logical == HybridTimestamp.maxLogical
            ? HybridTimestamp(wallMillis: t.wallMillis + 1, logical: 0)
            : HybridTimestamp(rawValue: t.rawValue + 1)
    }
}
