import Foundation
import Testing
@testable import ReplicaCore

@Suite struct WireCodecTests {
    let codec = WireCodec()
    static let version = Version(timestamp: HybridTimestamp(wallMillis: 1_763_800_000_000, logical: 3), node: "node1")

    static let samples: [WireMessage] = [
        .update(Update(origin: "node1", sequence: 42, entry: Entry(key: "greeting", version: version, schema: 2, payload: Array("\"hi\"".utf8)))),
        .update(Update(origin: "node1", sequence: 43, entry: Entry(key: "gone", version: version, payload: nil))),
        .update(Update(origin: "node1", sequence: 44, entry: Entry(key: "empty", version: version, payload: []))),
        .heartbeat(Heartbeat(origin: "node2", incarnation: UUID(), sequence: 9, timestamp: version.timestamp, digestRoot: 0xdead_beef, entryCount: 12)),
        .syncRequest(SyncRequest(origin: "node3", requestID: 7, buckets: (0..<StoreDigest.bucketCount).map { UInt64($0) * 31 })),
        .syncChunk(SyncChunk(origin: "node1", requestID: 7, index: 2, isLast: true, entries: [
            Entry(key: "a", version: version, payload: [1, 2, 3]),
            Entry(key: "ü-ключ", version: Version(timestamp: version.timestamp, node: "node2"), payload: nil),
        ])),
        .syncChunk(SyncChunk(origin: "node1", requestID: 8, index: 0, isLast: true, isUnavailable: true, entries: [])),
        .repairRequest(RepairRequest(origin: "node2", requestID: 9, first: 100, last: 4195)),
    ]

    @Test(arguments: samples) func roundTrips(_ message: WireMessage) throws {
        #expect(try codec.decode(codec.encode(message)) == message)
    }

    @Test func publishedFramesRoundTripAndCheckTheTopic() throws {
        let frames = codec.publishFrames(Self.samples[0])
        #expect(frames[0] == [0x75] + Array("greeting".utf8))
        #expect(try codec.decodePublished(frames) == Self.samples[0])
        #expect(throws: WireError.topicMismatch) { try codec.decodePublished([[0x75] + Array("other".utf8), frames[1]]) }
        #expect(throws: WireError.wrongFrameCount(1)) { try codec.decodePublished([frames[1]]) }
    }

    @Test(arguments: samples) func everyTruncationIsRejected(_ message: WireMessage) {
        let bytes = codec.encode(message)
        for length in 0..<bytes.count {
            #expect(throws: WireError.self) { try codec.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func trailingBytesAreRejected() {
        #expect(throws: WireError.trailingBytes(1)) { try codec.decode(codec.encode(Self.samples[0]) + [0]) }
    }

    @Test func headerErrorsAreNamed() {
        var bytes = codec.encode(Self.samples[0])
        bytes[0] = 0x00
        #expect(throws: WireError.badMagic(0)) { try codec.decode(bytes) }
        bytes[0] = WireCodec.magic
        bytes[1] = 9
        #expect(throws: WireError.unsupportedVersion(9)) { try codec.decode(bytes) }
        bytes[1] = WireCodec.protocolVersion
        bytes[2] = 77
        #expect(throws: WireError.unknownKind(77)) { try codec.decode(bytes) }
    }

    @Test func oversizedFieldsAreRejectedBeforeAllocation() {
        let small = WireCodec(limits: WireLimits(maxKeyBytes: 4, maxPayloadBytes: 8))
        let longKey = codec.encode(.update(Update(origin: "n", sequence: 1, entry: Entry(key: "toolong", version: Version(timestamp: .zero, node: "n"), payload: [1]))))
        #expect(throws: WireError.tooLarge(field: "key", size: 7, limit: 4)) { try small.decode(longKey) }
        let bigValue = codec.encode(.update(Update(origin: "n", sequence: 1, entry: Entry(key: "k", version: Version(timestamp: .zero, node: "n"), payload: Array(repeating: 1, count: 9)))))
        #expect(throws: WireError.tooLarge(field: "value", size: 9, limit: 8)) { try small.decode(bigValue) }
        // A length field claiming 4 GiB must fail as truncated, not try to read or allocate it.
        var lying = codec.encode(.update(Update(origin: "n", sequence: 1, entry: Entry(key: "k", version: Version(timestamp: .zero, node: "n"), payload: [1]))))
        lying.replaceSubrange(lying.count - 5..<lying.count - 1, with: [0x00, 0x0f, 0xff, 0xff])
        #expect(throws: WireError.truncated) { try codec.decode(lying) }
    }

    @Test func anUpdateMustBeWrittenByItsOrigin() {
        let forged = codec.encode(.update(Update(origin: "node1", sequence: 1, entry: Entry(key: "k", version: Version(timestamp: .zero, node: "node2"), payload: [1]))))
        #expect(throws: WireError.invalidField("update written by another node")) { try codec.decode(forged) }
    }

    @Test func randomGarbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        var rejected = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<200, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length > 3 && Bool.random() { bytes[0] = WireCodec.magic; bytes[1] = 1; bytes[2] = UInt8.random(in: 1...4) }
            if (try? codec.decode(bytes)) == nil { rejected += 1 }
        }
        #expect(rejected > 19_000)
    }

    @Test func mutatedValidMessagesNeverCrash() {
        for sample in Self.samples {
            let bytes = codec.encode(sample)
            for index in bytes.indices {
                for value: UInt8 in [0, 1, 0x7f, 0xff] {
                    var mutated = bytes
                    mutated[index] = value
                    _ = try? codec.decode(mutated)
                }
            }
        }
    }
}
