import Foundation

/// Encodes and decodes `WireMessage`s: versioned, big-endian, bounds-checked.
/// Decoding never traps: any malformed input becomes a `WireError` (see docs/protocol.md).
public struct WireCodec: Sendable {
    public static let magic: UInt8 = 0x52  // "R"
    public static let protocolVersion: UInt8 = 1
    /// First byte of the topic frame on PUB/SUB: "u" + key for updates, "h" for heartbeats.
    public static let updateTopic: UInt8 = 0x75
    public static let heartbeatTopic: UInt8 = 0x68

    public var limits: WireLimits

    public init(limits: WireLimits = .standard) { self.limits = limits }

    // MARK: Frames on PUB/SUB

    /// The two frames (topic, body) a PUB socket sends for an update or heartbeat.
    public func publishFrames(_ message: WireMessage) -> [[UInt8]] {
        let topic: [UInt8] = switch message {
        case .update(let update): [Self.updateTopic] + Array(update.entry.key.utf8)
        default: [Self.heartbeatTopic]
        }
        return [topic, encode(message)]
    }

    /// Decodes the frames a SUB socket received, checking that the topic matches the body.
    public func decodePublished(_ frames: [[UInt8]]) throws(WireError) -> WireMessage {
        guard frames.count == 2 else { throw .wrongFrameCount(frames.count) }
        let message = try decode(frames[1])
        switch message {
        case .update(let update):
            guard frames[0].first == Self.updateTopic, frames[0].dropFirst().elementsEqual(update.entry.key.utf8) else {
                throw .topicMismatch
            }
        case .heartbeat:
            guard frames[0] == [Self.heartbeatTopic] else { throw .topicMismatch }
        case .syncRequest, .syncChunk, .repairRequest:
            throw .unknownKind(message.kind.rawValue)  // sync messages never travel on PUB/SUB
        }
        return message
    }

    // MARK: Bodies

    public func encode(_ message: WireMessage) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writer.write(Self.magic)
        writer.write(Self.protocolVersion)
        writer.write(message.kind.rawValue)
        writeNode(message.origin, to: &writer)
        switch message {
        case .update(let update):
            writer.write(update.sequence)
            writeEntry(update.entry, to: &writer)
        case .heartbeat(let heartbeat):
            withUnsafeBytes(of: heartbeat.incarnation.uuid) { writer.write(raw: $0) }
            writer.write(heartbeat.sequence)
            writer.write(heartbeat.timestamp.rawValue)
            writer.write(heartbeat.digestRoot)
            writer.write(heartbeat.entryCount)
        case .syncRequest(let request):
            writer.write(request.requestID)
            writer.write(UInt16(request.buckets.count))
            for bucket in request.buckets { writer.write(bucket) }
        case .syncChunk(let chunk):
            writer.write(chunk.requestID)
            writer.write(chunk.index)
            writer.write(UInt8((chunk.isLast ? 1 : 0) | (chunk.isUnavailable ? 2 : 0)))
            writer.write(UInt16(chunk.entries.count))
            for entry in chunk.entries { writeEntry(entry, to: &writer) }
        case .repairRequest(let request):
            writer.write(request.requestID)
            writer.write(request.first)
            writer.write(request.last)
        }
        return writer.bytes
    }

    public func decode(_ bytes: [UInt8]) throws(WireError) -> WireMessage {
        guard bytes.count <= limits.maxFrameBytes else {
            throw .tooLarge(field: "message", size: bytes.count, limit: limits.maxFrameBytes)
        }
        var reader = ByteReader(bytes)
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
            let entry = try readEntry(&reader)
            guard entry.version.node == origin else { throw .invalidField("update written by another node") }
            message = .update(Update(origin: origin, sequence: sequence, entry: entry))
        case .heartbeat:
            let uuid = try reader.readBytes(16)
            let incarnation = UUID(uuid: (uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
                                          uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]))
            message = .heartbeat(Heartbeat(
                origin: origin, incarnation: incarnation, sequence: try reader.readUInt64(),
                timestamp: HybridTimestamp(rawValue: try reader.readUInt64()),
                digestRoot: try reader.readUInt64(), entryCount: try reader.readUInt64()))
        case .syncRequest:
            let requestID = try reader.readUInt64()
            let count = Int(try reader.readUInt16())
            guard count == StoreDigest.bucketCount else { throw .invalidField("bucket count \(count)") }
            var buckets: [UInt64] = []
            buckets.reserveCapacity(count)
            for _ in 0..<count { buckets.append(try reader.readUInt64()) }
            message = .syncRequest(SyncRequest(origin: origin, requestID: requestID, buckets: buckets))
        case .syncChunk:
            let requestID = try reader.readUInt64()
            let index = try reader.readUInt32()
            let flags = try reader.readByte()
            guard flags <= 3 else { throw .invalidField("chunk flags") }
            let count = Int(try reader.readUInt16())
            guard count <= limits.maxEntriesPerChunk else {
                throw .tooLarge(field: "chunk entry count", size: count, limit: limits.maxEntriesPerChunk)
            }
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append(try readEntry(&reader)) }
            message = .syncChunk(SyncChunk(
                origin: origin, requestID: requestID, index: index, isLast: flags & 1 != 0, isUnavailable: flags & 2 != 0,
                entries: entries))
        case .repairRequest:
            let requestID = try reader.readUInt64()
            let first = try reader.readUInt64()
            let last = try reader.readUInt64()
            guard first <= last else { throw .invalidField("repair range") }
            message = .repairRequest(RepairRequest(origin: origin, requestID: requestID, first: first, last: last))
        }
        try reader.expectEnd()
        return message
    }

    // MARK: Fields

    private func writeNode(_ node: NodeID, to writer: inout ByteWriter) {
        writer.write(UInt8(node.rawValue.utf8.count))
        writer.write(raw: node.rawValue.utf8)
    }

    private func readNode(_ reader: inout ByteReader) throws(WireError) -> NodeID {
        let length = Int(try reader.readByte())
        let bytes = try reader.readBytes(length)
        guard let name = String(validating: bytes, as: UTF8.self), let node = NodeID(rawValue: name) else {
            throw .invalidField("node id")
        }
        return node
    }

    private func writeEntry(_ entry: Entry, to writer: inout ByteWriter) {
        writer.write(entry.version.timestamp.rawValue)
        writeNode(entry.version.node, to: &writer)
        writer.write(UInt8(entry.isTombstone ? 1 : 0))
        writer.write(entry.schema)
        writer.write(UInt16(entry.key.utf8.count))
        writer.write(raw: entry.key.utf8)
        if let payload = entry.payload {
            writer.write(UInt32(payload.count))
            writer.write(raw: payload)
        }
    }

    private func readEntry(_ reader: inout ByteReader) throws(WireError) -> Entry {
        let timestamp = HybridTimestamp(rawValue: try reader.readUInt64())
        let node = try readNode(&reader)
        let flags = try reader.readByte()
        guard flags <= 1 else { throw .invalidField("entry flags") }
        let schema = try reader.readUInt16()
        let keyLength = Int(try reader.readUInt16())
        guard keyLength > 0 else { throw .invalidField("key (empty)") }
        guard keyLength <= limits.maxKeyBytes else {
            throw .tooLarge(field: "key", size: keyLength, limit: limits.maxKeyBytes)
        }
        guard let key = String(validating: try reader.readBytes(keyLength), as: UTF8.self) else {
            throw .invalidField("key (not UTF-8)")
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
