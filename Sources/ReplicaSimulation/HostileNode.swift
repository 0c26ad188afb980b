import Foundation
@_spi(Simulation) import ReplicaCore

/// A hostile member of a simulation (the `hostile` fault): it joins through a node, then
/// publishes well-formed messages with numbers at their limits and records about other nodes,
/// and answers what it is asked as a liar would. What it may do is docs/security.md's
/// "Bounds"; the cluster must go on converging and lose nothing.
final class HostileNode {
    static let id: NodeID = "mallory"
    static let host = "10.0.0.200"
    let epoch: UInt64
    private let codec = WireCodec()
    private let publisher: any MessageSocket
    private let server: any MessageSocket
    private let dealer: any MessageSocket
    private var random: SimulationRandom
    private var claim: UInt64 = 0

    init(network: SimulatedNetwork, joining target: Endpoint, wallMillis: UInt64, random: SimulationRandom) throws {
        self.random = random
        epoch = wallMillis
        let host = network.host(Self.host)
        publisher = try host.makeSocket(.xpub)
        try publisher.bind("tcp://\(Self.host):7000")
        server = try host.makeSocket(.router)
        try server.bind("tcp://\(Self.host):7001")
        dealer = try host.makeSocket(.dealer)
        try dealer.connect(target.syncAddress)
        _ = try dealer.send([codec.encode(.members(MembersMessage(origin: Self.id, wantsReply: true, records: [record(epoch: epoch)])))], wait: false)
    }

    private func record(epoch: UInt64, host: String = HostileNode.host, port: UInt16 = 7000) -> MemberRecord {
        MemberRecord(node: Self.id, epoch: epoch, incarnation: UUID(uuid: (0xBA, 0xD, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1)),
                     status: .active, address: Endpoint(host: host, port: port), publicKey: nil)
    }

    /// One round of mischief (every heartbeat interval): a heartbeat claiming what it never
    /// published, reports with numbers at their limits, forged records about `victims`, ghosts,
    /// and relays in the victims' names.
    func act(victims: [(node: NodeID, address: Endpoint, epoch: UInt64)], wallMillis: UInt64) {
        let edges: [UInt64] = [0, 1, 1 << 31, WireLimits.maxSequence]
        claim = random.chance(0.5) ? claim &+ 1_000_000 : edges[random.below(edges.count)]
        // (Not a report of hearing a victim directly in another life: a member may make a node
        // believe its id is used twice that way, as docs/security.md says.)
        let reports = victims.map { victim in
            let epoch = [0, victim.epoch, WireLimits.maxEpoch][random.below(3)]
            return PeerReport(node: victim.node, epoch: epoch, through: edges[random.below(edges.count)], echoWallMillis: wallMillis,
                              heldMillis: .max, hearsDirectly: epoch == victim.epoch && random.chance(0.5))
        }
        let heartbeat = Heartbeat(
            origin: Self.id, incarnation: record(epoch: epoch).incarnation, epoch: epoch, sequence: min(claim, WireLimits.maxSequence),
            timestamp: HybridTimestamp(wallMillis: min(wallMillis, WireLimits.maxEpoch), logical: 1), wallMillis: wallMillis,
            digestRoot: random.next(), entryCount: 0, membersDigest: random.next(), reports: reports)
        _ = try? publisher.send([codec.publishFrame(.heartbeat(heartbeat))], wait: false)
        var forged: [MemberRecord] = []
        for victim in victims where random.chance(0.3) {
            let epochs = [wallMillis, WireLimits.maxEpoch, victim.epoch &+ 1]
            let status: MemberRecord.Status = [.active, .left, .forgotten][random.below(3)]
            forged.append(MemberRecord(node: victim.node, epoch: epochs[random.below(epochs.count)], incarnation: random.uuid(), status: status,
                                       address: random.chance(0.5) ? Endpoint(host: "10.0.0.201", port: 1) : victim.address, publicKey: nil))
        }
        for ghost in 0..<random.below(5) {
            forged.append(MemberRecord(node: NodeID(rawValue: "ghost-\(random.below(2_000))-\(ghost)")!, epoch: wallMillis, incarnation: random.uuid(),
                                       status: .active, address: Endpoint(host: "10.0.9.\(ghost)", port: 7000), publicKey: nil))
        }
        if !forged.isEmpty {
            _ = try? publisher.send([codec.publishFrame(.members(MembersMessage(origin: Self.id, wantsReply: false, records: forged)))], wait: false)
        }
        // Its XPUB passes a relay only to a node that chose it to relay that victim (its reports
        // say it hears them). Lives and sequences at their limits; the entry, a tombstone dated
        // 1970 of a key nobody writes, is dropped as expired (or swept) and stands for no write.
        for victim in victims where random.chance(0.5) {
            let epoch = [1, victim.epoch, victim.epoch &+ 1, WireLimits.maxEpoch][random.below(4)]
            let entry = Entry(key: "hostile-relay", version: Version(timestamp: HybridTimestamp(wallMillis: 1, logical: 0), node: victim.node), payload: nil)
            let relayed = RelayedUpdate(origin: Self.id, source: victim.node, sourceEpoch: min(epoch, WireLimits.maxEpoch),
                                        sequence: max(edges[random.below(edges.count)], 1), entry: entry)
            _ = try? publisher.send([codec.publishFrame(.relay(relayed))], wait: false)
        }
        answerRequests()
    }

    /// Repairs: "no longer held"; syncs: an empty reply claiming it published through its claim.
    private func answerRequests() {
        while let message = try? server.receive(wait: false, maxFrames: 2, identifyingSender: false) {
            guard message.frames.count == 2, let request = try? codec.decode(message.frames[1]) else { continue }
            let reply: SyncChunk
            switch request {
            case .repairRequest(let repair):
                reply = SyncChunk(origin: Self.id, requestID: repair.requestID, index: 0, isLast: true, isUnavailable: true, entries: [])
            case .syncRequest(let sync):
                reply = SyncChunk(origin: Self.id, requestID: sync.requestID, index: 0, isLast: true,
                                  mark: StoreMark(epoch: epoch, serial: 0), sequence: min(claim, WireLimits.maxSequence), entries: [])
            default:
                continue
            }
            _ = try? server.send([message.frames[0], codec.encode(.syncChunk(reply))], wait: false)
        }
        while (try? dealer.receive(wait: false, maxFrames: 1, identifyingSender: false)) != nil {}
        while (try? publisher.receiveSubscription()) != nil {}
    }

    /// It is gone (the fault's end): its sockets close.
    func leave() {
        for socket in [publisher, server, dealer] { socket.close() }
    }
}
