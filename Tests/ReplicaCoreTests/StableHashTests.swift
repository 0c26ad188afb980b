import Foundation
import Testing
@testable import ReplicaCore

/// Digests are compared between nodes of different versions: the stable hash must not change.
@Suite struct StableHashTests {
    @Test(arguments: ["", "k", "counter/visits", "ключ", "emoji 🫖 key", String(repeating: "long-", count: 100)])
    func aStringHashesAsItsUTF8Bytes(key: String) {
        var bytes = StableHash()
        bytes.combine(bytes: Array(key.utf8))
        var string = StableHash()
        string.combine(utf8: key)
        #expect(string.finalized == bytes.finalized)
        #expect(StableHash.of(key) == bytes.finalized)
    }

    @Test func aBridgedStringHashesTheSame() {
        let bridged = NSString(string: "bridged/ключ").description
        #expect(StableHash.of(bridged) == StableHash.of("bridged/ключ"))
    }

    @Test func valuesArePinned() {
        // FNV-1a 64 then splitmix64's finaliser; recorded from the release that introduced
        // digests. A change here breaks anti-entropy between versions.
        #expect(StableHash.of("") == Self.reference(""))
        #expect(StableHash.of("k") == Self.reference("k"))
        #expect(StoreDigest.bucket(of: "counter/visits") == Int(Self.reference("counter/visits") % 1024))
    }

    /// The definition, written out: FNV-1a over the bytes, then splitmix64's finaliser.
    static func reference(_ string: String) -> UInt64 {
        var state: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in string.utf8 {
            state ^= UInt64(byte)
            state &*= 0x0000_0100_0000_01b3
        }
        var z = state &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// Keys compare by their bytes, as SQLite compares them: canonically equivalent strings
    /// (equal to Swift's `==`) are two keys.
    @Test func keysCompareByTheirBytes() {
        #expect("caf\u{E9}" == "cafe\u{301}", "Swift's String equality")
        #expect(!"caf\u{E9}".hasSameBytes(as: "cafe\u{301}"))
        #expect(ExactKey("caf\u{E9}") != ExactKey("cafe\u{301}"))
        #expect(IndexKey("caf\u{E9}") != IndexKey("cafe\u{301}"))
        #expect("key-1".hasSameBytes(as: String("key-12".dropLast())))
        #expect("".hasSameBytes(as: ""))
        #expect(!"a".hasSameBytes(as: "ab"))
        #expect(Set([ExactKey("caf\u{E9}"), ExactKey("cafe\u{301}"), ExactKey("caf\u{E9}")]).count == 2)
        #expect("cafe\u{301}/x".hasKeyPrefix("cafe") && !"cafe\u{301}/x".hasKeyPrefix("caf\u{E9}"))
    }
}
