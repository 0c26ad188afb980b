import Foundation
import PropertyBased
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
        .heartbeat(Heartbeat(
            origin: "node2", incarnation: UUID(), epoch: 1_763_800_000_000, sequence: 9, timestamp: version.timestamp,
            wallMillis: 1_763_800_000_123, digestRoot: 1, entryCount: 2, membersDigest: 3, storeSerial: 4, reports: [
                PeerReport(node: "node1", epoch: 5, through: 6, echoWallMillis: 7, heldMillis: 8, hearsDirectly: true),
                PeerReport(node: "node3", epoch: 0, through: 0, echoWallMillis: 0, heldMillis: 0, hearsDirectly: false),
            ])),
        .syncRequest(SyncRequest(origin: "node3", requestID: 7, buckets: (0..<StoreDigest.bucketCount).map { UInt64($0) * 31 },
                                 since: StoreMark(epoch: 11, serial: 12))),
        .syncChunk(SyncChunk(origin: "node1", requestID: 7, index: 2, isLast: true, entries: [
            Entry(key: "a", version: version, payload: [1, 2, 3]),
            Entry(key: "ü-ключ", version: Version(timestamp: version.timestamp, node: "node2"), payload: nil),
        ])),
        .syncChunk(SyncChunk(origin: "node1", requestID: 8, index: 0, isLast: true, isUnavailable: true, entries: [])),
        .repairRequest(RepairRequest(origin: "node2", requestID: 9, first: 100, last: 4195)),
        .syncChunk(SyncChunk(origin: "node1", requestID: 9, index: 0, isLast: false, mark: StoreMark(epoch: 1, serial: 2), entries: [])),
        .members(MembersMessage(origin: "node4", wantsReply: true, records: [
            MemberRecord(node: "node4", epoch: 1, incarnation: UUID(), status: .active, address: Endpoint(host: "10.0.0.4", port: 7000), publicKey: nil),
            MemberRecord(node: "node1", epoch: 2, incarnation: UUID(), status: .left, address: Endpoint(host: "node1.example", port: 7000),
                         publicKey: Array(0..<32)),
        ])),
        .members(MembersMessage(origin: "node1", wantsReply: false, records: [])),
        .relay(RelayedUpdate(origin: "node2", source: "node1", sourceEpoch: 3, sequence: 77,
                             entry: Entry(key: "greeting", version: version, payload: Array("\"hi\"".utf8)))),
        .updates(UpdateBatch(origin: "node1", firstSequence: 45, entries: [
            Entry(key: "greeting", version: version, schema: 2, payload: Array("\"hi\"".utf8)),
            Entry(key: "gone", version: version, payload: nil),
            Entry(key: "ü-ключ", version: Version(timestamp: HybridTimestamp(wallMillis: 1_763_800_000_001, logical: 0), node: "node1"), payload: []),
        ])),
    ]

    @Test(arguments: samples) func roundTrips(_ message: WireMessage) throws {
        #expect(try codec.decode(codec.encode(message)) == message)
    }

    /// The origin a header names, for the log line of a message whose body is malformed;
    /// nothing for a malformed header.
    @Test(arguments: samples) func theClaimedOriginIsTheHeaders(_ message: WireMessage) {
        var bytes = codec.encode(message)
        #expect(codec.claimedOrigin(of: bytes) == message.origin)
        bytes.removeLast(bytes.count - 5)  // the header cut inside the origin
        #expect(codec.claimedOrigin(of: bytes) == nil)
        #expect(codec.claimedOrigin(of: [0x52, 0x01, 0x01, 0x01, 0x61]) == nil, "another protocol version")
        #expect(codec.claimedOrigin(of: [0x52, 0x02, 0x09, 0x01, 0x61]) == nil, "an unknown kind")
        #expect(codec.claimedOrigin(of: [0x52, 0x02, 0x05, 0x01, 0x20]) == nil, "an invalid id")
    }

    @Test func publishedFramesRoundTripAndCheckTheTopic() throws {
        let frame = codec.publishFrame(Self.samples[0])
        #expect(frame.first == 0x75 && Array(frame.dropFirst()) == codec.encode(Self.samples[0]), "the topic, then the body")
        #expect(try codec.decodePublished(frame) == Self.samples[0])
        #expect(throws: WireError.topicMismatch) { try codec.decodePublished([0x68] + frame.dropFirst()) }
        #expect(throws: WireError.badMagic(0x75)) { try codec.decodePublished([0x75] + frame) }
        #expect(throws: WireError.truncated) { try codec.decodePublished([]) }
    }

    @Test(arguments: samples) func everyTruncationIsRejected(_ message: WireMessage) {
        let bytes = codec.encode(message)
        for length in 0..<bytes.count {
            #expect(throws: WireError.self) { try codec.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func relaysAndAnnouncementsTravelUnderTheirTopics() throws {
        let relay = Self.samples.first { $0.kind == .relay }!
        let frame = codec.publishFrame(relay)
        #expect(frame.starts(with: [0x72] + Array("node1".utf8) + [0]))
        #expect(frame.starts(with: WireCodec.relayTopic(for: "node1")))
        #expect(try codec.decodePublished(frame) == relay)
        #expect(throws: WireError.topicMismatch) { try codec.decodePublished(WireCodec.relayTopic(for: "node10") + codec.encode(relay)) }
        let members = Self.samples.first { $0.kind == .members }!
        #expect(codec.publishFrame(members).first == 0x6d)
        let request = codec.encode(Self.samples.first { $0.kind == .syncRequest }!)
        #expect(throws: WireError.misplacedKind(3, socket: "PUB/SUB")) { try codec.decodePublished([0x68] + request) }
    }

    @Test func aRelayedUpdateMustBeWrittenByItsSource() {
        let forged = codec.encode(.relay(RelayedUpdate(origin: "node2", source: "node1", sourceEpoch: 1, sequence: 1,
                                                       entry: Entry(key: "k", version: Version(timestamp: .zero, node: "node3"), payload: [1]))))
        #expect(throws: WireError.invalidField("relayed update written by another node")) { try codec.decode(forged) }
    }

    @Test func beaconsRoundTripAndRejectNonsense() throws {
        let beacon = Beacon(node: "node5", host: "10.0.0.5", port: 7000, publicKey: Array(0..<32))
        #expect(try codec.decodeBeacon(codec.encode(beacon)) == beacon)
        let bare = Beacon(node: "n", host: "", port: 1, publicKey: nil)
        #expect(try codec.decodeBeacon(codec.encode(bare)) == bare)
        var bytes = codec.encode(beacon)
        for length in 0..<bytes.count { #expect(throws: WireError.self) { try codec.decodeBeacon(Array(bytes.prefix(length))) } }
        bytes[4] = 1
        #expect(throws: WireError.unsupportedVersion(1)) { try codec.decodeBeacon(bytes) }
        #expect(throws: WireError.self) { try codec.decodeBeacon(Array(repeating: 0x52, count: 600)) }
    }

    /// The committed fuzz seeds (written by Fuzz/make_corpus.py from this page's layouts) decode,
    /// so the script and docs/protocol.md stay in step with the codec; those named `-refused`
    /// (numbers past their limits) are malformed.
    @Test func theFuzzSeedCorpusDecodes() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus")
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { !$0.hasSuffix("-published") }
        #expect(names.count >= 10)
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: corpus.appendingPathComponent(name)))
            if name == "beacon" {
                #expect(throws: Never.self, "\(name)") { _ = try codec.decodeBeacon(bytes) }
            } else if name.hasSuffix("-refused") {
                #expect(throws: WireError.self, "\(name)") { _ = try codec.decode(bytes) }
            } else {
                #expect(throws: Never.self, "\(name)") { _ = try codec.decode(bytes) }
            }
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

    /// Published sequences start at 1 (0 means "nothing published yet" in a heartbeat), in every
    /// kind that carries one: an update or relay at 0 is malformed, as a batch starting at 0 is.
    @Test func aPublishedSequenceOfZeroIsRefused() {
        let entry = Entry(key: "k", version: Version(timestamp: .zero, node: "n"), payload: [1])
        #expect(throws: WireError.invalidField("update sequence 0")) {
            try codec.decode(codec.encode(.update(Update(origin: "n", sequence: 0, entry: entry))))
        }
        #expect(throws: WireError.invalidField("relay sequence 0")) {
            try codec.decode(codec.encode(.relay(RelayedUpdate(origin: "m", source: "n", sourceEpoch: 1, sequence: 0, entry: entry))))
        }
        #expect(throws: Never.self) { try codec.decode(codec.encode(.update(Update(origin: "n", sequence: 1, entry: entry)))) }
    }

    /// What a dropped message's log line says: counts are not bytes, a misplaced kind is named,
    /// and a message cut short by the receiver says there were more frames.
    @Test func dropReasonsSayWhatWasWrong() {
        #expect(WireError.tooLarge(field: "member count", size: 1025, limit: 1024).description == "member count 1025 exceeds the limit of 1024")
        #expect(WireError.tooLarge(field: "key", size: 1025, limit: 1024).description == "key of 1025 bytes exceeds the limit of 1024")
        #expect(WireError.misplacedKind(1, socket: "the sync ROUTER").description == "message kind 1 (update) does not belong on the sync ROUTER")
        #expect(WireError.wrongFrameCount(1, more: true).description == "unexpected number of frames (more than 1)")
        #expect(WireError.wrongFrameCount(3).description == "unexpected number of frames (3)")
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

    /// Wall clocks and member epochs are milliseconds since 1970: beyond 48 bits they are not,
    /// and such a message is malformed (an epoch of `UInt64.max` crashed the node it named).
    @Test func clocksAndEpochsBeyond48BitsAreMalformed() {
        let huge = HybridTimestamp.maxWallMillis + 1
        let heartbeat = Heartbeat(origin: "node2", incarnation: UUID(), sequence: 1, timestamp: .zero, wallMillis: huge, digestRoot: 0, entryCount: 0)
        #expect(throws: WireError.invalidField("heartbeat wall clock")) { try codec.decode(codec.encode(.heartbeat(heartbeat))) }
        let echo = Heartbeat(origin: "node2", incarnation: UUID(), sequence: 1, timestamp: .zero, wallMillis: 5, digestRoot: 0, entryCount: 0, reports: [
            PeerReport(node: "node1", epoch: 1, through: 1, echoWallMillis: .max, heldMillis: 0, hearsDirectly: true),
        ])
        #expect(throws: WireError.invalidField("peer report echo")) { try codec.decode(codec.encode(.heartbeat(echo))) }
        let record = MemberRecord(node: "node1", epoch: .max, incarnation: UUID(), status: .forgotten, address: Endpoint(host: "h", port: 7000), publicKey: nil)
        let members = MembersMessage(origin: "node4", wantsReply: false, records: [record])
        #expect(throws: WireError.invalidField("member epoch")) { try codec.decode(codec.encode(.members(members))) }
        var edge = record
        edge.epoch = HybridTimestamp.maxWallMillis
        #expect((try? codec.decode(codec.encode(.members(MembersMessage(origin: "node4", wantsReply: false, records: [edge]))))) != nil)
    }

    @Test func aKeyWithANulIsMalformed() {
        let update = Update(origin: "node1", sequence: 1, entry: Entry(key: "a\u{0}b", version: Self.version, payload: [1]))
        #expect(throws: WireError.invalidField("key (contains U+0000)")) { try codec.decode(codec.encode(.update(update))) }
        #expect(throws: WireError.invalidField("key (contains U+0000)")) { try WireLimits.standard.validate(key: "\u{0}") }
    }

    /// Keys decode to exactly their bytes: multi-byte UTF-8 (a decomposed accent, an emoji)
    /// comes back as sent, and a key that is not UTF-8 (a stray continuation byte, a truncated
    /// sequence, an overlong form, a surrogate, U+FFFD's own bytes cut short) is malformed, never
    /// repaired into another key.
    @Test func keysDecodeToExactlyTheirBytes() throws {
        for key in ["caf\u{E9}", "cafe\u{301}", "\u{1F600}/x", "\u{FFFD}"] {
            let update = Update(origin: "node1", sequence: 1, entry: Entry(key: key, version: Self.version, payload: [1]))
            guard case .update(let decoded) = try codec.decode(codec.encode(.update(update))) else { Issue.record("not an update"); continue }
            #expect(Array(decoded.entry.key.utf8) == Array(key.utf8))
        }
        let placeholder = Update(origin: "node1", sequence: 1, entry: Entry(key: "abcd", version: Self.version, payload: [1]))
        let encoded = codec.encode(.update(placeholder))
        let at = encoded.count - 4 - 1 - 4  // the key's 4 bytes, before the payload's length and byte
        let notUTF8: [[UInt8]] = [
            [0x80, 0x61, 0x61, 0x61],  // a continuation byte with nothing before it
            [0x61, 0x61, 0x61, 0xC3],  // a 2-byte sequence cut short
            [0x61, 0xE2, 0x82, 0x61],  // a 3-byte sequence cut short
            [0xC0, 0xAF, 0x61, 0x61],  // an overlong "/"
            [0xE0, 0x80, 0xAF, 0x61],  // an overlong "/" in 3 bytes
            [0xF0, 0x80, 0x80, 0xAF],  // an overlong "/" in 4 bytes
            [0xED, 0xA0, 0x80, 0x61],  // a surrogate (U+D800)
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xF5, 0x80, 0x80, 0x80],  // a lead byte no sequence has
            [0x61, 0xFF, 0x61, 0x61],
        ]
        for bad in notUTF8 {
            var bytes = encoded
            bytes.replaceSubrange(at..<at + 4, with: bad)
            #expect(throws: WireError.invalidField("key (not UTF-8)")) { try codec.decode(bytes) }
        }
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
            if length > 3 && Bool.random() { bytes[0] = WireCodec.magic; bytes[1] = WireCodec.protocolVersion; bytes[2] = UInt8.random(in: 1...8) }
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

    // MARK: Batches of updates (kind 8)

    /// Entries of one writer spread over keys (some not ASCII), tombstones, empty and large
    /// payloads, schemas and timestamps, from one number each.
    static func batchEntry(_ code: Int) -> Entry {
        let key = code % 5 == 0 ? "ключ-\(code % 97)" : "k\(code % 1009)"
        let payload: [UInt8]? = code % 7 == 0 ? nil : (0..<(code % 11 == 0 ? 3000 : code % 40)).map { UInt8(truncatingIfNeeded: $0 &* code) }
        let timestamp = HybridTimestamp(wallMillis: 1_763_800_000_000 + UInt64(code % 100_000), logical: UInt16(code % 3))
        return Entry(key: key, version: Version(timestamp: timestamp, node: "node1"), schema: UInt16(code % 4), payload: payload)
    }

    @Test func aBatchDecodesToExactlyTheEntriesEncoded() async {
        let entries = Gen.int(in: 0...1_000_000).map { Self.batchEntry($0) }.array(of: 1...60)
        let first = Gen.int(in: 1...1_000_000_000)
        await propertyCheck(count: 200, input: entries, first) { (entries: [Entry], first: Int) throws in
            let batch = UpdateBatch(origin: "node1", firstSequence: UInt64(first), entries: entries)
            #expect(try codec.decode(codec.encode(.updates(batch))) == .updates(batch))
            // The publishing path: into a reused buffer, with the topic, read in place.
            let frame = codec.publishFrame(batchOf: "node1", firstSequence: UInt64(first), entries: entries[...], reusing: [9, 9, 9])
            #expect(Array(frame) == codec.publishFrame(.updates(batch)))
            #expect(try codec.decodePublished(frame) == .updates(batch))
            #expect(batch.sequences == UInt64(first)...UInt64(first + entries.count - 1))
            #expect(frame.count == 1 + 3 + 1 + 5 + 8 + 2 + entries.reduce(0) { $0 + WireCodec.batchedSize(of: $1) }, "batchedSize counts exactly")
            // Any cut of it is refused.
            let cut = Int.random(in: 0..<frame.count)
            #expect(throws: WireError.self) { try codec.decodePublished(Array(frame.prefix(cut))) }
        }
    }

    /// A batch's count and first sequence are checked before any entry is read.
    @Test func batchHeadersOutOfBoundsAreRefused() {
        func batch(first: UInt64, count: UInt16) -> [UInt8] {
            var writer = ByteWriter(capacity: 64)
            writer.write(WireCodec.magic)
            writer.write(WireCodec.protocolVersion)
            writer.write(WireMessage.Kind.updates.rawValue)
            writer.write(UInt8(5))
            writer.write(raw: Array("node1".utf8))
            writer.write(first)
            writer.write(count)
            return writer.bytes
        }
        let entry = Array(codec.encode(Self.samples.last!).suffix(from: 4 + 5 + 8 + 2))
        #expect(throws: WireError.invalidField("batch entry count 0")) { try codec.decode(batch(first: 1, count: 0)) }
        #expect(throws: WireError.tooLarge(field: "batch entry count", size: 1025, limit: 1024)) { try codec.decode(batch(first: 1, count: 1025) + entry) }
        #expect(throws: WireError.invalidField("batch sequence")) { try codec.decode(batch(first: 0, count: 3) + entry) }
        #expect(throws: WireError.invalidField("batch sequence")) { try codec.decode(batch(first: .max - 1, count: 3) + entry) }
        #expect(throws: WireError.truncated, "it says 4 entries and holds 3") { try codec.decode(batch(first: 1, count: 4) + entry) }
        #expect(throws: Never.self) { try codec.decode(batch(first: 1, count: 3) + entry) }
        let small = WireCodec(limits: WireLimits(maxKeyBytes: 4))
        #expect(throws: WireError.tooLarge(field: "key", size: 8, limit: 4), "each entry keeps the limits of a single update") {
            try small.decode(batch(first: 1, count: 3) + entry)
        }
    }

    /// The example in docs/protocol.md (kind 8), byte for byte.
    @Test func theBatchExampleOfTheProtocolPageDecodes() throws {
        let hex = "75 52 02 08 02 6e 31 00 00 00 00 00 00 00 07 00 02 00 00 01 9a 00 00 00 01 00 00 00 00 01 61 00 00 00 03 22 78 22 00 00 01 9a 00 00 00 02 01 00 00 00 01 62"
        let bytes = hex.split(separator: " ").map { UInt8($0, radix: 16)! }
        let writer = NodeID(rawValue: "n1")!
        let expected = WireMessage.updates(UpdateBatch(origin: writer, firstSequence: 7, entries: [
            Entry(key: "a", version: Version(timestamp: HybridTimestamp(rawValue: 0x0000_019A_0000_0001), node: writer), payload: Array("\"x\"".utf8)),
            Entry(key: "b", version: Version(timestamp: HybridTimestamp(rawValue: 0x0000_019A_0000_0002), node: writer), payload: nil),
        ]))
        #expect(try codec.decodePublished(bytes) == expected)
        #expect(codec.publishFrame(expected) == bytes)
    }

    /// Batches and sync chunks are cut to fit a frame whatever the configured limits: a frame
    /// over four times the limit makes the receiver's libzmq drop the connection.
    @Test(arguments: [WireLimits.standard, WireLimits(maxPayloadBytes: 8192), WireLimits(maxKeyBytes: 16, maxPayloadBytes: 16)])
    func batchesAndChunksFitAFrame(_ limits: WireLimits) {
        #expect(limits.maxBatchBytes + 100 <= limits.maxFrameBytes)
        #expect(limits.maxChunkBytes + 100 <= limits.maxFrameBytes)
        #expect(limits.maxChunkBytes >= min(256 * 1024, limits.maxFrameBytes - 512))
    }

    /// A member table larger than one message may hold is split into messages each receiver
    /// accepts, in order, every record once, and only the last asks for a reply. (One message of
    /// it all was refused as malformed once a cluster had seen more than 1,024 members.)
    @Test(arguments: [(WireLimits.standard, 3_000), (WireLimits(maxMembers: 7), 50), (WireLimits(maxKeyBytes: 16, maxPayloadBytes: 16), 500)])
    func aLargeMemberTableIsSplitIntoMessagesEveryReceiverAccepts(_ limits: WireLimits, _ count: Int) throws {
        let codec = WireCodec(limits: limits)
        let key = [UInt8](repeating: 7, count: 32)
        let records = (0..<count).map { index in
            MemberRecord(node: NodeID(rawValue: "member-with-a-long-name-\(index)")!, epoch: UInt64(index), incarnation: UUID(),
                         status: index % 3 == 0 ? .active : .left, address: Endpoint(host: "host-\(index).example.org", port: 7000),
                         publicKey: key)
        }
        let messages = MembersMessage.split(origin: "n1", wantsReply: true, records: records, limits: limits)
        #expect(messages.count > 1)
        #expect(messages.map(\.wantsReply) == Array(repeating: false, count: messages.count - 1) + [true])
        var decoded: [MemberRecord] = []
        for message in messages {
            let bytes = codec.encode(.members(message))
            #expect(bytes.count <= limits.maxFrameBytes)
            guard case .members(let back) = try codec.decode(bytes) else { Issue.record("not a members message"); return }
            decoded += back.records
        }
        #expect(decoded == records)
        #expect(MembersMessage.split(origin: "n1", wantsReply: true, records: Array(records.prefix(3)), limits: limits).count == 1)
    }

    @Test func batchesTravelUnderTheUpdateTopicOnly() throws {
        let batch = Self.samples.first { $0.kind == .updates }!
        #expect(codec.publishFrame(batch).first == 0x75)
        #expect(throws: WireError.topicMismatch) { try codec.decodePublished([0x68] + codec.encode(batch)) }
    }
}
