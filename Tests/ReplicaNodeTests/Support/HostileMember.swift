import Foundation
import ReplicaCore

/// A member written from docs/protocol.md alone that sends what a real node never would: forged
/// member records, heartbeats with edge numbers, claims it does not back. It binds an XPUB and
/// a ROUTER like a node (insecure), so that a node it joins dials it back.
final class HostileMember: @unchecked Sendable {
    let id: NodeID
    let port: UInt16
    let incarnation = UUID()
    let epoch = UInt64(Date().timeIntervalSince1970 * 1000)
    let codec = WireCodec()
    private let context: ZMQContext
    /// Where it publishes (updates, heartbeats), and where requests to it arrive.
    let publisher: ZMQSocket
    let router: ZMQSocket
    /// Requests its ROUTER received, by kind.
    private(set) var repairRequests = 0
    private(set) var syncRequests = 0

    init(id: NodeID, port: UInt16) throws {
        self.id = id
        self.port = port
        context = try ZMQContext()
        publisher = try context.socket(.xpub)
        try publisher.bind("tcp://127.0.0.1:\(port)")
        router = try context.socket(.router)
        try router.bind("tcp://127.0.0.1:\(port + 1)")
    }

    var record: MemberRecord {
        MemberRecord(node: id, epoch: epoch, incarnation: incarnation, status: .active, address: Endpoint(host: "127.0.0.1", port: port), publicKey: nil)
    }

    /// Sends `message` to the ROUTER of the node listening at `nodePort`, on a connection of its own.
    func send(_ message: WireMessage, toNodeAt nodePort: UInt16) throws {
        try send(frames: [codec.encode(message)], toNodeAt: nodePort)
    }

    func send(frames: [[UInt8]], toNodeAt nodePort: UInt16) throws {
        let dealer = try context.socket(.dealer)
        defer { dealer.close() }
        try dealer.setLinger(.seconds(1))
        try dealer.connect("tcp://127.0.0.1:\(nodePort + 1)")
        _ = try dealer.send(frames, wait: true)
    }

    /// Member records as an outsider would send them: `origin` is whatever it claims to be.
    func sendRecords(_ records: [MemberRecord], as origin: NodeID? = nil, toNodeAt nodePort: UInt16) throws {
        for start in stride(from: 0, to: records.count, by: codec.limits.maxMembers) {
            let slice = Array(records[start..<min(start + codec.limits.maxMembers, records.count)])
            try send(.members(MembersMessage(origin: origin ?? id, wantsReply: false, records: slice)), toNodeAt: nodePort)
        }
    }

    /// Joins the node at `nodePort` and waits until it subscribes to this member's heartbeats:
    /// from then on what it publishes reaches the node.
    func join(_ nodePort: UInt16, timeout: Duration = .seconds(15)) throws -> Bool {
        try send(.members(MembersMessage(origin: id, wantsReply: true, records: [record])), toNodeAt: nodePort)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard try publisher.waitUntilReadable(timeout: .milliseconds(100)) else { continue }
            while let (change, _) = try publisher.receiveSubscription() {
                if change == .subscribed(Array("h".utf8)) { return true }
            }
        }
        return false
    }

    func publish(_ message: WireMessage) throws {
        _ = try publisher.send([codec.publishFrame(message)])
    }

    /// A heartbeat of this member, claiming `sequence`, with `root` as its digest.
    func heartbeat(sequence: UInt64, root: UInt64 = 1, reports: [PeerReport] = []) -> WireMessage {
        .heartbeat(Heartbeat(
            origin: id, incarnation: incarnation, epoch: epoch, sequence: sequence, timestamp: HybridTimestamp(wallMillis: epoch, logical: 1),
            wallMillis: UInt64(Date().timeIntervalSince1970 * 1000), digestRoot: root, entryCount: 0, reports: reports))
    }

    /// Answers what reached its ROUTER: a repair with "no longer held", a sync with an empty
    /// last chunk that says it published through `servedThrough`. Counts them.
    func answerRequests(servedThrough: UInt64 = 0) throws {
        while let message = try router.receive(maxFrames: 2) {
            guard message.frames.count == 2, let request = try? codec.decode(message.frames[1]) else { continue }
            let reply: SyncChunk
            switch request {
            case .repairRequest(let repair):
                repairRequests += 1
                reply = SyncChunk(origin: id, requestID: repair.requestID, index: 0, isLast: true, isUnavailable: true, entries: [])
            case .syncRequest(let sync):
                syncRequests += 1
                reply = SyncChunk(origin: id, requestID: sync.requestID, index: 0, isLast: true, isUnavailable: false,
                                  mark: StoreMark(epoch: epoch, serial: 0), sequence: servedThrough, entries: [])
            default:
                continue
            }
            _ = try router.send([message.frames[0], codec.encode(.syncChunk(reply))])
        }
    }

    func close() {
        publisher.close()
        router.close()
    }
}

/// The resident memory of process `pid`, in bytes (from /proc).
func residentBytes(of pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return nil }
    return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
}

/// How many file descriptors process `pid` holds open.
func openDescriptors(of pid: pid_t) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
}
