import ReplicaCore

/// The virtual time of one simulation: a monotonic instant that moves only when the
/// simulation says so. Its origin is a real instant; nothing reads the real clock after that.
public final class SimulatedTime: @unchecked Sendable {
    public let origin: MonotonicInstant
    public private(set) var elapsed: Duration = .zero
    /// The wall clock at the origin, in ms since 1970 (a node's own clock adds its skew).
    public let wallOrigin: UInt64

    public init(wallOrigin: UInt64 = 1_800_000_000_000) {
        origin = .now
        self.wallOrigin = wallOrigin
    }

    public var now: MonotonicInstant { origin + elapsed }
    public var wallMillis: UInt64 { wallOrigin + UInt64(max(0, elapsed / .milliseconds(1))) }

    /// Moves to `instant` (never back).
    public func advance(to instant: MonotonicInstant) {
        elapsed = max(elapsed, instant - origin)
    }

    public func advance(by duration: Duration) {
        elapsed += max(.zero, duration)
    }
}

/// A seeded generator (SplitMix64): the same seed gives the same choices, on every machine.
public struct SimulationRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { fraction() < p }

    /// A number in 0 ..< 1.
    public mutating func fraction() -> Double { Double(next() >> 11) / Double(1 << 53) }

    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

    /// A new generator for a part of the simulation, so that one part's choices do not shift
    /// another's (a fault schedule stays the same whatever the workload drew).
    public mutating func split() -> SimulationRandom { SimulationRandom(seed: next()) }
}

/// A running hash of what happened, in order (FNV-1a 64): equal seeds give equal hashes.
public struct TraceHash: Sendable, Equatable, CustomStringConvertible {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func combine(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            value ^= UInt64(byte)
            value &*= 0x100_0000_01b3
        }
        value ^= 0xff
        value &*= 0x100_0000_01b3
    }

    public mutating func combine(_ frames: [[UInt8]]) {
        for frame in frames { combine(frame) }
    }

    public mutating func combine(_ strings: String...) {
        for string in strings { combine(string.utf8) }
    }

    public mutating func combine(_ number: UInt64) {
        combine(withUnsafeBytes(of: number.bigEndian) { Array($0) })
    }

    public var description: String { String(value, radix: 16, uppercase: false).leftPadded(to: 16) }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
