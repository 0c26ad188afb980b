import Foundation
@testable import ReplicaCore

/// Every input is fed to the envelope and sync-message decoders, both as a message body and as
/// PUB/SUB frames, and to the discovery-beacon decoder. Decoding must never trap, and whatever decodes must encode back to exactly
/// the same bytes (the format is canonical), so a decoder that accepts something it should not
/// shows up as a crash here. What decodes is then acted on as a member's message would be
/// (`actOn`): numbers the codec lets through must not trap the peer layer either.
func fuzzWireDecoders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let codec = WireCodec()
    if let message = try? codec.decode(bytes) {
        precondition(codec.encode(message) == bytes, "decode/encode is not a round trip")
        actOn(message)
    }
    if let beacon = try? codec.decodeBeacon(bytes) {
        precondition(codec.encode(beacon) == bytes, "beacon decode/encode is not a round trip")
    }
    // As a PUB/SUB message: a topic, then a body.
    if let message = try? codec.decodePublished(bytes) {
        precondition(codec.publishFrame(message) == bytes, "published messages are not a round trip")
        actOn(message)
    }
    return 0
}

let start = MonotonicInstant.now
let timing = PeerTiming(heartbeatInterval: .seconds(1), suspectAfter: .milliseconds(1500), downAfter: .seconds(5), requestTimeout: .seconds(10))

/// The decisions a member's message feeds, from a session that has heard the member once (so
/// that gaps, restarts and coverage all apply), and a member table holding the sender.
func actOn(_ message: WireMessage) {
    let sender = message.origin
    let record = MemberRecord(node: sender, epoch: 7, incarnation: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2)),
                              status: .active, address: Endpoint(host: "127.0.0.1", port: 7000), publicKey: nil)
    var session = PeerSession(record: record, now: start)
    let local = PeerSession.LocalView(node: "fuzz-local", digestRoot: 1, membersDigest: 0, syncing: false)
    let first = Heartbeat(origin: sender, incarnation: record.incarnation, epoch: 7, sequence: 10, timestamp: .zero,
                          wallMillis: 1_000, digestRoot: 1, entryCount: 0)
    _ = session.heartbeatReceived(first, local: local, now: start, wallMillis: 1_000)
    let now = start + .milliseconds(500)
    switch message {
    case .heartbeat(let heartbeat):
        _ = session.heartbeatReceived(heartbeat, local: local, now: now, wallMillis: heartbeat.wallMillis)
        for report in heartbeat.reports {
            session.covered(through: report.through, epoch: report.epoch)
            session.heldElsewhere(epoch: report.epoch, through: report.through)
            var clash = IdentityClash(window: .seconds(10), confirmAfter: .seconds(5))
            _ = clash.reported(epoch: report.epoch, hearsDirectly: report.hearsDirectly, by: sender, ourEpoch: 7, now: now)
        }
    case .update(let update): _ = session.updatesReceived(update.sequence...update.sequence, now: now)
    case .updates(let batch): _ = session.updatesReceived(batch.sequences, now: now)
    case .relay(let relay): _ = session.relayReceived(sequence: relay.sequence, epoch: relay.sourceEpoch, now: now, base: timing)
    case .syncChunk(let chunk):
        session.syncCompleted(mark: chunk.mark, sequence: chunk.sequence, askedInFull: false)
        _ = session.repairChunk(requestID: chunk.requestID, entries: chunk.entries.count, isLast: chunk.isLast, isUnavailable: chunk.isUnavailable, now: now)
    case .repairRequest(let request):
        var buffer = RetransmitBuffer(capacity: 64)
        for sequence in UInt64(1)...20 { buffer.record("k\(sequence)", sequence: sequence) }
        _ = buffer.keys(request.first...request.last)
    case .members(let members):
        var table = Membership(local: MemberRecord(node: "fuzz-local", epoch: 5, incarnation: UUID(), status: .active,
                                                   address: Endpoint(host: "127.0.0.1", port: 7100), publicKey: nil),
                               departureRetention: 7 * 86_400_000, epochAllowance: Membership.yearMillis)
        _ = table.merge([record], wallMillis: 1_000)
        _ = table.merge(members.records, wallMillis: 1_000, sender: nil, heardDirectly: [sender])
        _ = table.releaseHeld(heardDirectly: [], wallMillis: 2_000)
        _ = table.expireDepartures(wallMillis: .max)
        _ = table.nextExpiry
    case .syncRequest: break
    }
    for step in 1...3 {
        for action in session.tick(now: now + .seconds(step * 3), base: timing, holdRepairs: false) {
            if case .requestRepair(let range) = action { session.repairStarted(requestID: 1, range: range, now: now) }
        }
    }
    _ = Int(clamping: session.stream.missingCount.addingSaturated(session.repair.map { OriginStream.length(of: $0.range) } ?? 0))
    _ = session.heldThrough
}

// libFuzzer's driver, linked by -sanitize=fuzzer. SwiftPM supplies `main` for an executable
// target, so libFuzzer's own `main` is not used: this one hands over to the driver.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runFuzzerDriver(&argc, &argv) { fuzzWireDecoders($0, $1) })
