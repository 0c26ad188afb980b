#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A reading of the monotonic clock, as `ContinuousClock.Instant` reads it (time asleep counts),
/// in a type whose layout the compiler knows. The standard library's instant is resilient: a
/// struct that holds one (the node's core, a member's session) is copied and read through
/// runtime type metadata, which cost the hot path more than the work it did.
public struct MonotonicInstant: InstantProtocol, Hashable, Sendable {
    /// Time since the clock's origin (boot, on Linux).
    public var sinceOrigin: Duration

    public init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    public static var now: MonotonicInstant {
        var time = timespec()
        #if canImport(Darwin)
        clock_gettime(CLOCK_MONOTONIC, &time)
        #else
        clock_gettime(CLOCK_BOOTTIME, &time)
        #endif
        return MonotonicInstant(sinceOrigin: .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec)))
    }

    public func advanced(by duration: Duration) -> MonotonicInstant { MonotonicInstant(sinceOrigin: sinceOrigin + duration) }
    public func duration(to other: MonotonicInstant) -> Duration { other.sinceOrigin - sinceOrigin }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.sinceOrigin < rhs.sinceOrigin }
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant { lhs.advanced(by: rhs) }
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant { lhs.advanced(by: .zero - rhs) }
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration { lhs.sinceOrigin - rhs.sinceOrigin }
    public static func += (lhs: inout MonotonicInstant, rhs: Duration) { lhs = lhs + rhs }
    public static func -= (lhs: inout MonotonicInstant, rhs: Duration) { lhs = lhs - rhs }
}
