/// A 64-bit hash that is the same in every process and on every machine (Swift's `Hasher` is
/// seeded per process, so it cannot be used for digests that nodes compare).
/// FNV-1a over the bytes, finished with the splitmix64 mixer so that XOR-combined hashes of
/// similar entries do not cancel in structured ways.
struct StableHash {
    private(set) var state: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine<Bytes: Sequence<UInt8>>(bytes: Bytes) {
        for byte in bytes {
            state ^= UInt64(byte)
            state &*= 0x0000_0100_0000_01b3
        }
    }

    /// The bytes of `string`'s UTF-8 form, the same as `combine(bytes: string.utf8)`, read from
    /// its contiguous storage when it has one (a native string always does) instead of through
    /// the view's iterator.
    mutating func combine(utf8 string: String) {
        if string.utf8.withContiguousStorageIfAvailable({ combine(bytes: $0) }) == nil {
            combine(bytes: string.utf8)
        }
    }

    mutating func combine(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { combine(bytes: $0) }
    }

    var finalized: UInt64 { Self.mix(state &+ 0x9e37_79b9_7f4a_7c15) }

    /// splitmix64's finaliser: every input bit moves every output bit.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    static func of(_ string: String) -> UInt64 {
        var hash = StableHash()
        hash.combine(utf8: string)
        return hash.finalized
    }
}
