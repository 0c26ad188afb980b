import Foundation

/// Encodes and decodes `WireMessage`s: versioned, big-endian, bounds-checked.
/// Decoding never traps: any malformed input becomes a `WireError` (see docs/protocol.md).
public struct WireCodec: Sendable {
    public static let magic: UInt8 = 0x52  // "R"
    /// Version 2 added membership (kind 6), relays (kind 7), epochs, peer reports and store marks;
    /// batches of updates (kind 8) came later within it, as a kind of their own (docs/protocol.md,
    /// "Mixed versions").
    public static let protocolVersion: UInt8 = 2
    /// The topic that opens every message on PUB/SUB (SUB filters on it): "u" for updates, "h"
    /// for heartbeats, "m" for member announcements, "r" + source id + 0x00 for relayed updates.
    public static let updateTopic: UInt8 = 0x75
    public static let heartbeatTopic: UInt8 = 0x68
    public static let membersTopic: UInt8 = 0x6d
    public static let relayTopic: UInt8 = 0x72

    public var limits: WireLimits

    public init(limits: WireLimits = .standard) { self.limits = limits }

    // MARK: Messages on PUB/SUB

    /// The topic a subscriber subscribes to for the relayed updates of `source`. The 0x00 ends
    /// the id, so that relays of `node1` are not also relays of `node10`.
    public static func relayTopic(for source: NodeID) -> [UInt8] {
        [relayTopic] + Array(source.rawValue.utf8) + [0]
    }

    /// The topics every subscriber takes (relays are subscribed one source at a time).
    public static let standingTopics: [[UInt8]] = [[updateTopic], [heartbeatTopic], [membersTopic]]

    /// The one frame a PUB socket sends for a message that travels on PUB/SUB: its topic, then
    /// its body. One frame, not two: libzmq 4.3 can end a connection between the frames of a
    /// message it is delivering, and then aborts the reading process (fq.cpp "!_more").
    public func publishFrame(_ message: WireMessage) -> [UInt8] {
        Self.topic(of: message) + encode(message)
    }

    /// The one frame that publishes `entries` (all written by `origin`, sequences from
    /// `firstSequence`) as a batch of updates, encoded into `buffer` (emptied, its capacity kept):
    /// the publishing path reuses one buffer and allocates nothing per update.
    public func publishFrame(batchOf origin: NodeID, firstSequence: UInt64, entries: ArraySlice<Entry>, reusing buffer: consuming [UInt8]) -> [UInt8] {
        var writer = ByteWriter(reusing: buffer)
        writer.write(Self.updateTopic)
        writeHeader(kind: .updates, origin: origin, to: &writer)
        writeBatchBody(origin: origin, firstSequence: firstSequence, entries: entries, to: &writer)
        return writer.bytes
    }

    /// The encoded size of `entry` in a batch (what `maxBatchBytes` counts), without encoding it.
    /// Whether `entry` goes out on PUB in an update: up to `maxBatchBytes` of entry record. A
    /// larger one is not published; members fetch it by a repair (docs/protocol.md, kind 1).
    public func publishesInline(_ entry: Entry) -> Bool {
        Self.batchedSize(of: entry) <= limits.maxBatchBytes
    }

    public static func batchedSize(of entry: Entry) -> Int {
        8 + 1 + 2 + 2 + entry.key.utf8.count + (entry.payload.map { 4 + $0.count } ?? 0)
    }

    private static func topic(of message: WireMessage) -> [UInt8] {
        switch message {
        case .update, .updates: [updateTopic]
        case .members: [membersTopic]
        case .relay(let relay): relayTopic(for: relay.source)
        default: [heartbeatTopic]
        }
    }

    /// Decodes what a SUB socket received, checking that the topic matches the body.
    public func decodePublished(_ frame: [UInt8]) throws(WireError) -> WireMessage {
        guard let first = frame.first else { throw .truncated }
        var topicLength = 1
        if first == Self.relayTopic {
            guard let end = frame.firstIndex(of: 0) else { throw .topicMismatch }
            topicLength = end + 1
        }
        let message = try decode(frame, from: topicLength)
        switch message {
        case .update, .updates, .heartbeat, .members, .relay:
            guard frame.prefix(topicLength).elementsEqual(Self.topic(of: message)) else { throw .topicMismatch }
        case .syncRequest, .syncChunk, .repairRequest:
            throw .misplacedKind(message.kind.rawValue, socket: "PUB/SUB")  // sync messages never travel there
        }
        return message
    }

    // MARK: Bodies

    public func encode(_ message: WireMessage) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writeHeader(kind: message.kind, origin: message.origin, to: &writer)
        switch message {
        case .update(let update):
            writer.write(update.sequence)
            writeEntry(update.entry, to: &writer)
        case .updates(let batch):
            writeBatchBody(origin: batch.origin, firstSequence: batch.firstSequence, entries: batch.entries[...], to: &writer)
        case .heartbeat(let heartbeat):
            writeUUID(heartbeat.incarnation, to: &writer)
            writer.write(heartbeat.epoch)
            writer.write(heartbeat.sequence)
            writer.write(heartbeat.timestamp.rawValue)
            writer.write(heartbeat.wallMillis)
            writer.write(heartbeat.digestRoot)
            writer.write(heartbeat.entryCount)
            writer.write(heartbeat.membersDigest)
            writer.write(heartbeat.storeSerial)
            // The count is 16 bits; receivers take at most `maxMembers` reports.
            let reports = heartbeat.reports.prefix(limits.maxMembers)
            writer.write(UInt16(clamping: reports.count))
            for report in reports {
                writeNode(report.node, to: &writer)
                writer.write(report.epoch)
                writer.write(report.through)
                writer.write(report.echoWallMillis)
                writer.write(report.heldMillis)
                writer.write(UInt8(report.hearsDirectly ? 1 : 0))
            }
        case .syncRequest(let request):
            writer.write(request.requestID)
            writeMark(request.since, to: &writer)
            writer.write(UInt16(request.buckets.count))
            for bucket in request.buckets { writer.write(bucket) }
        case .syncChunk(let chunk):
            writer.write(chunk.requestID)
            writer.write(chunk.index)
            writer.write(UInt8((chunk.isLast ? 1 : 0) | (chunk.isUnavailable ? 2 : 0)))
            writeMark(chunk.mark, to: &writer)
            writer.write(chunk.sequence)
            writer.write(UInt16(chunk.entries.count))
            for entry in chunk.entries { writeEntry(entry, to: &writer) }
        case .repairRequest(let request):
            writer.write(request.requestID)
            writer.write(request.first)
            writer.write(request.last)
        case .members(let members):
            writer.write(UInt8(members.wantsReply ? 1 : 0))
            writer.write(UInt16(members.records.count))
            for record in members.records { writeRecord(record, to: &writer) }
        case .relay(let relay):
            writeNode(relay.source, to: &writer)
            writer.write(relay.sourceEpoch)
            writer.write(relay.sequence)
            writeEntry(relay.entry, to: &writer)
        }
        return writer.bytes
    }

    public func decode(_ bytes: [UInt8]) throws(WireError) -> WireMessage {
        try decode(bytes, from: 0)
    }

    /// The origin a message's header names, if the header is well formed (for a log line
    /// about a message whose body is not; never acted on).
    public func claimedOrigin(of bytes: [UInt8]) -> NodeID? {
        var reader = ByteReader(bytes, from: 0)
        guard (try? reader.readByte()) == Self.magic, (try? reader.readByte()) == Self.protocolVersion,
              let kind = try? reader.readByte(), WireMessage.Kind(rawValue: kind) != nil else { return nil }
        return try? readNode(&reader)
    }

    /// Decodes the message that starts at `offset` of `bytes` (after a published frame's topic:
    /// the body is read in place, not copied out).
    func decode(_ bytes: [UInt8], from offset: Int) throws(WireError) -> WireMessage {
        guard bytes.count - offset <= limits.maxFrameBytes else {
            throw .tooLarge(field: "message", size: bytes.count - offset, limit: limits.maxFrameBytes)
        }
        var reader = ByteReader(bytes, from: offset)
        let magic = try reader.readByte()
        guard magic == Self.magic else { throw .badMagic(magic) }
        let version = try reader.readByte()
        guard version == Self.protocolVersion else { throw .unsupportedVersion(version) }
        let kindByte = try reader.readByte()
        guard let kind = WireMessage.Kind(rawValue: kindByte) else { throw .unknownKind(kindByte) }
        let origin = try readNode(&reader)
        let message: WireMessage
        switch kind {
        case .update:
            let sequence = try reader.readUInt64()
            guard sequence >= 1 else { throw .invalidField("update sequence 0") }
            guard sequence <= WireLimits.maxSequence else { throw .invalidField("update sequence") }
            let entry = try readEntry(&reader)
            guard entry.version.node == origin else { throw .invalidField("update written by another node") }
            message = .update(Update(origin: origin, sequence: sequence, entry: entry))
        case .updates:
            let first = try reader.readUInt64()
            let count = Int(try reader.readUInt16())
            guard count >= 1 else { throw .invalidField("batch entry count 0") }
            guard count <= limits.maxEntriesPerChunk else {
                throw .tooLarge(field: "batch entry count", size: count, limit: limits.maxEntriesPerChunk)
            }
            guard first >= 1, first <= WireLimits.maxSequence - UInt64(count - 1) else { throw .invalidField("batch sequence") }
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append(try readEntry(&reader, writtenBy: origin)) }
            message = .updates(UpdateBatch(origin: origin, firstSequence: first, entries: entries))
        case .heartbeat:
            let incarnation = try readUUID(&reader)
            let epoch = try reader.readUInt64()
            guard epoch <= WireLimits.maxEpoch else { throw .invalidField("heartbeat epoch") }
            let sequence = try reader.readUInt64()
            guard sequence <= WireLimits.maxSequence else { throw .invalidField("heartbeat sequence") }
            let timestamp = HybridTimestamp(rawValue: try reader.readUInt64())
            let wallMillis = try reader.readUInt64()
            guard wallMillis <= HybridTimestamp.maxWallMillis else { throw .invalidField("heartbeat wall clock") }
            let digestRoot = try reader.readUInt64()
            let entryCount = try reader.readUInt64()
            let membersDigest = try reader.readUInt64()
            let storeSerial = try reader.readUInt64()
            let count = Int(try reader.readUInt16())
            guard count <= limits.maxMembers else { throw .tooLarge(field: "peer report count", size: count, limit: limits.maxMembers) }
            var reports: [PeerReport] = []
            reports.reserveCapacity(count)
            for _ in 0..<count {
                let node = try readNode(&reader)
                let reportEpoch = try reader.readUInt64()
                guard reportEpoch <= WireLimits.maxEpoch else { throw .invalidField("peer report epoch") }
                let through = try reader.readUInt64()
                guard through <= WireLimits.maxSequence else { throw .invalidField("peer report sequence") }
                let echo = try reader.readUInt64()
                guard echo <= HybridTimestamp.maxWallMillis else { throw .invalidField("peer report echo") }
                let held = try reader.readUInt32()
                let flags = try reader.readByte()
                guard flags <= 1 else { throw .invalidField("peer report flags") }
                reports.append(PeerReport(node: node, epoch: reportEpoch, through: through, echoWallMillis: echo, heldMillis: held, hearsDirectly: flags == 1))
            }
            message = .heartbeat(Heartbeat(
                origin: origin, incarnation: incarnation, epoch: epoch, sequence: sequence, timestamp: timestamp,
                wallMillis: wallMillis, digestRoot: digestRoot, entryCount: entryCount, membersDigest: membersDigest,
                storeSerial: storeSerial, reports: reports))
        case .syncRequest:
            let requestID = try reader.readUInt64()
            let since = try readMark(&reader)
            let count = Int(try reader.readUInt16())
            guard count == StoreDigest.bucketCount else { throw .invalidField("bucket count \(count)") }
            var buckets: [UInt64] = []
            buckets.reserveCapacity(count)
            for _ in 0..<count { buckets.append(try reader.readUInt64()) }
            message = .syncRequest(SyncRequest(origin: origin, requestID: requestID, buckets: buckets, since: since))
        case .syncChunk:
            let requestID = try reader.readUInt64()
            let index = try reader.readUInt32()
            let flags = try reader.readByte()
            guard flags <= 3 else { throw .invalidField("chunk flags") }
            let mark = try readMark(&reader)
            let sequence = try reader.readUInt64()
            guard sequence <= WireLimits.maxSequence else { throw .invalidField("chunk sequence") }
            let count = Int(try reader.readUInt16())
            guard count <= limits.maxEntriesPerChunk else {
                throw .tooLarge(field: "chunk entry count", size: count, limit: limits.maxEntriesPerChunk)
            }
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append(try readEntry(&reader)) }
            message = .syncChunk(SyncChunk(
                origin: origin, requestID: requestID, index: index, isLast: flags & 1 != 0, isUnavailable: flags & 2 != 0,
                mark: mark, sequence: sequence, entries: entries))
        case .repairRequest:
            let requestID = try reader.readUInt64()
            let first = try reader.readUInt64()
            let last = try reader.readUInt64()
            guard first <= last, last <= WireLimits.maxSequence else { throw .invalidField("repair range") }
            message = .repairRequest(RepairRequest(origin: origin, requestID: requestID, first: first, last: last))
        case .members:
            let flags = try reader.readByte()
            guard flags <= 1 else { throw .invalidField("members flags") }
            let count = Int(try reader.readUInt16())
            guard count <= limits.maxMembers else { throw .tooLarge(field: "member count", size: count, limit: limits.maxMembers) }
            var records: [MemberRecord] = []
            records.reserveCapacity(count)
            for _ in 0..<count { records.append(try readRecord(&reader)) }
            message = .members(MembersMessage(origin: origin, wantsReply: flags == 1, records: records))
        case .relay:
            let source = try readNode(&reader)
            let sourceEpoch = try reader.readUInt64()
            guard sourceEpoch <= WireLimits.maxEpoch else { throw .invalidField("relay source epoch") }
            let sequence = try reader.readUInt64()
            guard sequence >= 1 else { throw .invalidField("relay sequence 0") }
            guard sequence <= WireLimits.maxSequence else { throw .invalidField("relay sequence") }
            let entry = try readEntry(&reader)
            guard entry.version.node == source else { throw .invalidField("relayed update written by another node") }
            message = .relay(RelayedUpdate(origin: origin, source: source, sourceEpoch: sourceEpoch, sequence: sequence, entry: entry))
        }
        try reader.expectEnd()
        return message
    }

    // MARK: Discovery beacons (UDP, not ZeroMQ)

    /// The magic bytes that open a discovery beacon ("RPLB").
    public static let beaconMagic: [UInt8] = Array("RPLB".utf8)

    /// A UDP beacon: magic, protocol version, then the sender's id, advertised port and host
    /// (empty: the datagram's source address) and CURVE public key (empty when insecure).
    public func encode(_ beacon: Beacon) -> [UInt8] {
        var writer = ByteWriter(capacity: 96)
        writer.write(raw: Self.beaconMagic)
        writer.write(Self.protocolVersion)
        writeNode(beacon.node, to: &writer)
        writer.write(beacon.port)
        writer.write(UInt8(beacon.host.utf8.count))
        writer.write(raw: beacon.host.utf8)
        writer.write(UInt8(beacon.publicKey?.count ?? 0))
        writer.write(raw: beacon.publicKey ?? [])
        return writer.bytes
    }

    public func decodeBeacon(_ bytes: [UInt8]) throws(WireError) -> Beacon {
        guard bytes.count <= 512 else { throw .tooLarge(field: "beacon", size: bytes.count, limit: 512) }
        var reader = ByteReader(bytes)
        guard try reader.readBytes(4) == Self.beaconMagic else { throw .badMagic(bytes.first ?? 0) }
        let version = try reader.readByte()
        guard version == Self.protocolVersion else { throw .unsupportedVersion(version) }
        let node = try readNode(&reader)
        let port = try reader.readUInt16()
        guard port > 0 && port < .max else { throw .invalidField("beacon port") }
        let hostLength = Int(try reader.readByte())
        guard let host = String(validating: try reader.readBytes(hostLength), as: UTF8.self),
              host.allSatisfy({ !$0.isWhitespace })
        else { throw .invalidField("beacon host") }
        let keyLength = Int(try reader.readByte())
        guard keyLength == 0 || keyLength == 32 else { throw .invalidField("beacon key length") }
        let key = try reader.readBytes(keyLength)
        try reader.expectEnd()
        return Beacon(node: node, host: host, port: port, publicKey: keyLength == 0 ? nil : key)
    }

    // MARK: Fields

    private func writeHeader(kind: WireMessage.Kind, origin: NodeID, to writer: inout ByteWriter) {
        writer.write(Self.magic)
        writer.write(Self.protocolVersion)
        writer.write(kind.rawValue)
        writeNode(origin, to: &writer)
    }

    /// First sequence, count, then each entry without its writer (the origin wrote them all:
    /// an entry by another writer would be read back as the origin's, with another version).
    private func writeBatchBody(origin: NodeID, firstSequence: UInt64, entries: ArraySlice<Entry>, to writer: inout ByteWriter) {
        precondition((1...limits.maxEntriesPerBatch).contains(entries.count), "a batch holds 1...\(limits.maxEntriesPerBatch) entries, not \(entries.count)")
        precondition(entries.allSatisfy { $0.version.node == origin }, "a batch holds only entries written by its origin \(origin)")
        writer.write(firstSequence)
        writer.write(UInt16(entries.count))
        for entry in entries { writeEntry(entry, to: &writer, withWriter: false) }
    }

    private func writeNode(_ node: NodeID, to writer: inout ByteWriter) {
        writer.write(UInt8(node.rawValue.utf8.count))
        writer.write(utf8: node.rawValue)
    }

    private func readNode(_ reader: inout ByteReader) throws(WireError) -> NodeID {
        let length = Int(try reader.readByte())
        guard let name = try reader.readString(length), let node = NodeID(rawValue: name) else {
            throw .invalidField("node id")
        }
        return node
    }

    private func writeUUID(_ uuid: UUID, to writer: inout ByteWriter) {
        withUnsafeBytes(of: uuid.uuid) { writer.write(raw: $0) }
    }

    private func readUUID(_ reader: inout ByteReader) throws(WireError) -> UUID {
        let b = try reader.readBytes(16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    private func writeMark(_ mark: StoreMark, to writer: inout ByteWriter) {
        writer.write(mark.epoch)
        writer.write(mark.serial)
    }

    private func readMark(_ reader: inout ByteReader) throws(WireError) -> StoreMark {
        let epoch = try reader.readUInt64()
        guard epoch <= WireLimits.maxEpoch else { throw .invalidField("store mark epoch") }
        return StoreMark(epoch: epoch, serial: try reader.readUInt64())
    }

    private func writeRecord(_ record: MemberRecord, to writer: inout ByteWriter) {
        writeNode(record.node, to: &writer)
        writer.write(record.epoch)
        writeUUID(record.incarnation, to: &writer)
        writer.write(record.status.rawValue)
        writer.write(UInt8(record.address.host.utf8.count))
        writer.write(raw: record.address.host.utf8)
        writer.write(record.address.port)
        writer.write(UInt8(record.publicKey?.count ?? 0))
        writer.write(raw: record.publicKey ?? [])
    }

    private func readRecord(_ reader: inout ByteReader) throws(WireError) -> MemberRecord {
        let node = try readNode(&reader)
        let epoch = try reader.readUInt64()
        // Epochs are wall-clock milliseconds; one beyond 48 bits is not a record any node wrote.
        guard epoch <= WireLimits.maxEpoch else { throw .invalidField("member epoch") }
        let incarnation = try readUUID(&reader)
        let statusByte = try reader.readByte()
        guard let status = MemberRecord.Status(rawValue: statusByte) else { throw .invalidField("member status") }
        let hostLength = Int(try reader.readByte())
        guard hostLength > 0, let host = String(validating: try reader.readBytes(hostLength), as: UTF8.self),
              host.allSatisfy({ !$0.isWhitespace && $0 != "/" })
        else { throw .invalidField("member host") }
        let port = try reader.readUInt16()
        guard port > 0 && port < .max else { throw .invalidField("member port") }
        let keyLength = Int(try reader.readByte())
        guard keyLength == 0 || keyLength == 32 else { throw .invalidField("member key length") }
        let key = try reader.readBytes(keyLength)
        return MemberRecord(
            node: node, epoch: epoch, incarnation: incarnation, status: status,
            address: Endpoint(host: host, port: port), publicKey: keyLength == 0 ? nil : key)
    }

    /// An entry record; `withWriter` false in a batch, whose entries are all the origin's.
    private func writeEntry(_ entry: Entry, to writer: inout ByteWriter, withWriter: Bool = true) {
        writer.write(entry.version.timestamp.rawValue)
        if withWriter { writeNode(entry.version.node, to: &writer) }
        writer.write(UInt8(entry.isTombstone ? 1 : 0))
        writer.write(entry.schema)
        writer.write(UInt16(entry.key.utf8.count))
        writer.write(utf8: entry.key)
        if let payload = entry.payload {
            writer.write(UInt32(payload.count))
            writer.write(raw: payload)
        }
    }

    /// An entry record; in a batch (`writtenBy` the origin) it has no writer field.
    private func readEntry(_ reader: inout ByteReader, writtenBy writer: NodeID? = nil) throws(WireError) -> Entry {
        let timestamp = HybridTimestamp(rawValue: try reader.readUInt64())
        let node: NodeID
        if let writer { node = writer } else { node = try readNode(&reader) }
        let flags = try reader.readByte()
        guard flags <= 1 else { throw .invalidField("entry flags") }
        let schema = try reader.readUInt16()
        let keyLength = Int(try reader.readUInt16())
        guard keyLength > 0 else { throw .invalidField("key (empty)") }
        guard keyLength <= limits.maxKeyBytes else {
            throw .tooLarge(field: "key", size: keyLength, limit: limits.maxKeyBytes)
        }
        guard let key = try reader.readString(keyLength) else { throw .invalidField("key (not UTF-8)") }
        guard key.utf8.withContiguousStorageIfAvailable({ !$0.contains(0) }) ?? !key.utf8.contains(0) else {
            throw .invalidField(WireLimits.nulInKey)
        }
        var payload: [UInt8]?
        if flags == 0 {
            let length = Int(try reader.readUInt32())
            guard length <= limits.maxPayloadBytes else {
                throw .tooLarge(field: "value", size: length, limit: limits.maxPayloadBytes)
            }
            payload = try reader.readBytes(length)
        }
        return Entry(key: key, version: Version(timestamp: timestamp, node: node), schema: schema, payload: payload)
    }
}

/// A discovery beacon (`serve --discover`): "a member is at HOST:PORT" on the LAN segment.
public struct Beacon: Equatable, Sendable {
    public var node: NodeID
    /// The advertised host; empty means "the address this datagram came from".
    public var host: String
    public var port: UInt16
    public var publicKey: [UInt8]?

    public init(node: NodeID, host: String, port: UInt16, publicKey: [UInt8]?) {
        self.node = node
        self.host = host
        self.port = port
        self.publicKey = publicKey
    }
}
