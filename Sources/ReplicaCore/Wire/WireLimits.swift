/// Size limits enforced by the codec on both encode and decode.
public struct WireLimits: Sendable, Equatable {
    /// Longest key, in UTF-8 bytes.
    public var maxKeyBytes: Int
    /// Largest value payload, in bytes.
    public var maxPayloadBytes: Int
    /// Most entries in one sync chunk, and in one batch of updates.
    public var maxEntriesPerChunk: Int
    /// Most member records in one members message (a larger table is split:
    /// `MembersMessage.split`), and peer reports in one heartbeat: the most active members a
    /// cluster may have (a heartbeat reporting more is refused).
    public var maxMembers: Int

    public init(maxKeyBytes: Int = 1024, maxPayloadBytes: Int = 1 << 20, maxEntriesPerChunk: Int = 1024, maxMembers: Int = 1024) {
        self.maxKeyBytes = maxKeyBytes
        self.maxPayloadBytes = maxPayloadBytes
        self.maxEntriesPerChunk = maxEntriesPerChunk
        self.maxMembers = maxMembers
    }

    public static let standard = WireLimits()

    /// The highest update sequence a message may carry (2^53 - 1: a process life publishing
    /// ten million updates a second reaches it after 28 years; JSON readers keep it exact). A
    /// higher one is malformed, so that what a receiver computes from sequences cannot overflow.
    public static let maxSequence: UInt64 = (1 << 53) - 1
    /// The highest epoch (a wall-clock millisecond, 48 bits like a timestamp's wall part).
    public static let maxEpoch: UInt64 = HybridTimestamp.maxWallMillis

    /// The largest frame a node accepts (also set as ZMQ_MAXMSGSIZE on its sockets): one full
    /// chunk of maximum entries is not allowed; chunks are cut by bytes too (see `maxChunkBytes`).
    public var maxFrameBytes: Int { maxPayloadBytes + maxKeyBytes + 4096 }
    /// What libzmq delivers at most (`ZMQ_MAXMSGSIZE` on member sockets): four frame limits, so
    /// that a frame over the limit is read and counted as oversized; a larger one makes libzmq
    /// drop the connection without saying why.
    public var deliveredFrameBytes: Int { maxFrameBytes * 4 }
    /// Sync chunks are cut when they reach this many bytes, so a chunk always fits a frame
    /// (with small configured limits too: a chunk over the frame limit would make the
    /// receiver's libzmq drop the connection).
    public var maxChunkBytes: Int { min(maxFrameBytes - 512, max(256 * 1024, maxPayloadBytes + maxKeyBytes + 512)) }
    /// A batch of updates is cut when it reaches this many bytes (one entry larger than this
    /// goes alone): large enough that a batch costs one send for hundreds of small updates,
    /// small enough that a receiver's queue of them stays a few megabytes, and always within
    /// the frame limit (the batch's header is under 100 bytes).
    public var maxBatchBytes: Int { min(64 * 1024, maxFrameBytes - 512) }
    /// Most entries in one batch: the count is a 16-bit field.
    public var maxEntriesPerBatch: Int { min(maxEntriesPerChunk, Int(UInt16.max)) }

    /// Validates a key as the codec would, for callers that want the error before sending.
    public func validate(key: String) throws(WireError) {
        let size = key.utf8.count
        guard size > 0 else { throw .invalidField(Self.emptyKey) }
        guard size <= maxKeyBytes else { throw .tooLarge(field: "key", size: size, limit: maxKeyBytes) }
        guard !key.utf8.contains(0) else { throw .invalidField(Self.nulInKey) }
    }

    /// Why a key with U+0000 is refused: SQLite's text functions (and GRDB's string binding)
    /// end a string at its first NUL, so such a key would be stored whole but read back as
    /// another, shorter key.
    static let nulInKey = "key (contains U+0000)"
    static let emptyKey = "key (empty)"

    public func validate(payload: [UInt8]?) throws(WireError) {
        guard let payload, payload.count > maxPayloadBytes else { return }
        throw .tooLarge(field: "value", size: payload.count, limit: maxPayloadBytes)
    }
}
