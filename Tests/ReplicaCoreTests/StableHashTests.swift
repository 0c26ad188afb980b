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

    /// The examples docs/protocol.md gives under "Digests", so that an outsider who implements
    /// them from the page and gets these figures agrees with us (they were also checked against
    /// a running node's `status` digest and heartbeat).
    @Test func theDocumentedDigestExamplesHold() {
        var digest = StoreDigest()
        #expect(digest.root == 0x8d16_1e5c_483a_be3a, "an empty store")
        #expect(StoreDigest.bucket(of: "a") == 295)
        let value = Entry(key: "a", version: Version(timestamp: HybridTimestamp(rawValue: 117_665_099_783_471_104), node: "dn1"),
                          payload: Array("\"x\"".utf8))
        #expect(StoreDigest.hash(of: value) == 0x1ee7_d413_cd01_0f0b)
        digest.replace(oldHash: nil, newHash: StoreDigest.hash(of: value), bucket: 295)
        #expect(digest.root == 0x134b_e71c_c09e_9aee)
        let tombstone = Entry(key: "a", version: Version(timestamp: HybridTimestamp(rawValue: 1_795_426_939_426 << 16), node: "dn1"), payload: nil)
        #expect(StoreDigest.hash(of: tombstone) == 0x4bb0_8db2_b2e6_051e)
        digest.replace(oldHash: StoreDigest.hash(of: value), newHash: StoreDigest.hash(of: tombstone), bucket: 295)
        #expect(digest.root == 0x851b_37ee_5fd3_dc69)
        let incarnation = UUID(uuidString: "7CB57E19-FBBE-4AF9-83A7-028F1BA36567")!
        let record = MemberRecord(node: "dn1", epoch: 1_795_426_935_627, incarnation: incarnation, status: .active,
                                  address: Endpoint(host: "127.0.0.1", port: 27800), publicKey: nil)
        #expect(Membership(local: record).digest == 0x6255_f9a2_887b_8e00)
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

    /// `status` shows a root as protocol.md writes it: 16 digits, leading zeros kept.
    @Test func digestRootsShowAsSixteenHexDigits() {
        #expect(ReplicaStatus.digestText(0x003c_6423_2f09_9630) == "003c64232f099630")
        #expect(ReplicaStatus.digestText(0) == "0000000000000000")
        #expect(ReplicaStatus.digestText(.max) == "ffffffffffffffff")
    }
}
