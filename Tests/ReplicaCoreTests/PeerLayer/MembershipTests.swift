import Foundation
import PropertyBased
import Testing
@testable import ReplicaCore

/// `Membership` and `RelayPlanner`: join, leave, forget, gossip that stops by itself, and relays.
@Suite struct MembershipTests {
    static func record(_ node: NodeID, epoch: UInt64 = 1, status: MemberRecord.Status = .active, port: UInt16 = 7000) -> MemberRecord {
        MemberRecord(node: node, epoch: epoch, incarnation: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(epoch % 256))),
                     status: status, address: Endpoint(host: "10.0.0.1", port: port), publicKey: nil)
    }

    func table(_ local: NodeID = "a", retention: UInt64 = .max) -> Membership { Membership(local: Self.record(local), departureRetention: retention) }

    /// A record of this node at the largest epoch (refused by the codec, but not only the codec
    /// feeds the table) is answered without a trap: `epoch + 1` crashed the node at every start.
    /// The re-assertion stays within the epochs the wire carries (2^48 made every receiver drop
    /// our records as malformed, for good).
    @Test func aRecordOfThisNodeAtTheLastEpochDoesNotTrap() {
        for status in [MemberRecord.Status.active, .left, .forgotten] {
            var membership = table()
            let result = membership.merge([Self.record("a", epoch: .max, status: status)], wallMillis: 1_000)
            #expect(membership.local.status == .active)
            #expect(membership.local.epoch == WireLimits.maxEpoch)
            #expect(result.reasserted, "\(status)")
        }
    }

    // MARK: Claims a record's source cannot back

    static let wall: UInt64 = 1_000_000

    func bounded(activeCapacity: Int = 1023, recordCapacity: Int = 8192) -> Membership {
        Membership(local: Self.record("a"), epochAllowance: 60_000, activeCapacity: activeCapacity, recordCapacity: recordCapacity)
    }

    /// A record dated later than the wall clock plus the drift the cluster accepts was written
    /// by no clock the cluster accepts: refused, of a member or of this node (no re-assertion
    /// up to an epoch members would refuse). One forged record at 2^48 - 1 evicted a member for
    /// good: it could never re-assert above it, and the record never expired.
    @Test func aRecordDatedAheadOfTheClockIsRefused() {
        var membership = bounded()
        for node: NodeID in ["b", "a"] {
            for status in [MemberRecord.Status.active, .left, .forgotten] {
                let forged = Self.record(node, epoch: Self.wall + 60_001, status: status)
                let result = membership.merge([forged], wallMillis: Self.wall)
                #expect(result.refused == [Membership.Refusal(record: forged, reason: .datedAhead)], "\(node) \(status)")
                #expect(result.changes.isEmpty && !result.reasserted && result.announce.isEmpty)
            }
        }
        #expect(membership["b"] == nil && membership.local.epoch == 1)
        let edge = Self.record("b", epoch: Self.wall + 60_000)
        #expect(membership.merge([edge], wallMillis: Self.wall).changes == [.joined(edge)], "within the drift it is taken")
    }

    struct ContestRow: Sendable, CustomTestStringConvertible {
        var name: String
        var incoming: MemberRecord
        var sender: NodeID?
        var heard: Set<NodeID>
        var changes: [Membership.Change]
        var held: Bool
        var testDescription: String { name }
    }

    static let contestRows: [ContestRow] = [
        ContestRow(name: "a forget of a member heard directly is held back", incoming: record("b", epoch: 2, status: .forgotten),
                   sender: nil, heard: ["b"], changes: [], held: true),
        ContestRow(name: "so is a departure another node sends", incoming: record("b", epoch: 2, status: .left),
                   sender: "c", heard: ["b"], changes: [], held: true),
        ContestRow(name: "and a move", incoming: record("b", epoch: 2, port: 9999), sender: "c", heard: ["b"], changes: [], held: true),
        ContestRow(name: "its own departure is taken", incoming: record("b", epoch: 2, status: .left), sender: "b", heard: ["b"],
                   changes: [.left(record("b", epoch: 2, status: .left))], held: false),
        ContestRow(name: "its own move is taken (CURVE proved its key)", incoming: record("b", epoch: 2, port: 9999), sender: "b", heard: ["b"],
                   changes: [.moved(record("b", epoch: 2, port: 9999))], held: false),
        ContestRow(name: "a restart at its address ends nothing: taken from anyone", incoming: record("b", epoch: 2),
                   sender: nil, heard: ["b"], changes: [.restarted(record("b", epoch: 2))], held: false),
        ContestRow(name: "its own restart is taken", incoming: record("b", epoch: 2),
                   sender: "b", heard: ["b"], changes: [.restarted(record("b", epoch: 2))], held: false),
        ContestRow(name: "a forget of a member not heard is taken from anyone", incoming: record("b", epoch: 2, status: .forgotten),
                   sender: nil, heard: ["c"], changes: [.forgotten(record("b", epoch: 2, status: .forgotten))], held: false),
        ContestRow(name: "a record that loses changes nothing and is not held", incoming: record("b", epoch: 0, status: .forgotten),
                   sender: nil, heard: ["b"], changes: [], held: false),
    ]

    /// A record that would end or move a member heard directly is taken from that member alone:
    /// anyone could send it, and it made members forget a live node, or dial an address where
    /// nothing answers.
    @Test(arguments: contestRows) func contested(_ row: ContestRow) {
        var membership = bounded()
        _ = membership.merge([Self.record("b")], wallMillis: Self.wall)
        let result = membership.merge([row.incoming], wallMillis: Self.wall, sender: row.sender, heardDirectly: row.heard)
        #expect(result.changes == row.changes)
        #expect((membership.held[NodeID("b")] != nil) == row.held)
        #expect(!result.held.isEmpty == row.held)
        if row.held { #expect(membership["b"] == Self.record("b"), "the member's record stays") }
    }

    /// A held record is taken once its member falls silent (a restart elsewhere: the old process
    /// stops first), and dropped if it never does.
    @Test func aHeldRecordIsTakenOnceItsMemberFallsSilent() {
        var membership = bounded()
        _ = membership.merge([Self.record("b"), Self.record("c")], wallMillis: Self.wall)
        let moved = Self.record("b", epoch: 2, port: 9999)
        _ = membership.merge([moved], wallMillis: Self.wall, heardDirectly: ["b", "c"])
        #expect(membership.releaseHeld(heardDirectly: ["b", "c"], wallMillis: Self.wall + 1_000) == nil, "still heard: still held")
        let released = membership.releaseHeld(heardDirectly: ["c"], wallMillis: Self.wall + 2_000)
        #expect(released?.changes == [.moved(moved)])
        #expect(membership.held.isEmpty && membership["b"] == moved)

        let forget = Self.record("c", epoch: 2, status: .forgotten)
        _ = membership.merge([forget], wallMillis: Self.wall, heardDirectly: ["c"])
        #expect(membership.releaseHeld(heardDirectly: ["c"], wallMillis: Self.wall + 1_000) == nil)
        let dropped = membership.releaseHeld(heardDirectly: ["c"], wallMillis: Self.wall + Membership.holdTime)
        #expect(dropped?.refused == [Membership.Refusal(record: forget, reason: .contested)], "refused after the hold time")
        #expect(membership.held.isEmpty && membership["c"] == Self.record("c"))

        let departure = Self.record("c", epoch: 3, status: .left)
        _ = membership.merge([departure], wallMillis: Self.wall, heardDirectly: ["c"])
        _ = membership.merge([departure], wallMillis: Self.wall, sender: "c", heardDirectly: ["c"])
        #expect(membership.releaseHeld(heardDirectly: [], wallMillis: Self.wall + 1) == nil, "its own copy came: dropped quietly")
        #expect(membership.held.isEmpty)
    }

    /// The table is bounded: new members beyond its capacity are refused (each would be dialled
    /// and reported in every heartbeat; a flood of them exhausted the node's descriptors).
    @Test func newMembersBeyondTheCapacityAreRefused() {
        var membership = bounded(activeCapacity: 2, recordCapacity: 4)
        let result = membership.merge(["b", "c", "d"].map { Self.record($0) }, wallMillis: Self.wall)
        #expect(result.changes.count == 2)
        #expect(result.refused.map(\.reason) == [.tableFull])
        #expect(membership.active.count == 2)
        let departures = membership.merge(["e", "f", "g"].map { Self.record($0, epoch: 5, status: .left) }, wallMillis: Self.wall)
        #expect(departures.changes.count == 2 && departures.refused.map(\.reason) == [.tableFull], "four records in all")
        let known = membership.merge([Self.record("b", epoch: 2)], wallMillis: Self.wall)
        #expect(known.changes == [.restarted(Self.record("b", epoch: 2))], "known members still change")
    }

    /// A departure past the retention by the wall clock is dropped on arrival, unless the
    /// node's clock cannot say (`expiryWallMillis` nil: unchecked or skewed; helper-72: a clock
    /// days ahead dropped every departure it was sent); a re-assertion still takes the wall clock.
    @Test func departuresExpireOnArrivalOnlyByACheckedClock() {
        let departure = Self.record("c", epoch: 1_000, status: .left)
        var byWall = table(retention: 500)
        #expect(byWall.merge([departure], wallMillis: 10_000).changes.isEmpty)
        #expect(byWall["c"] == nil, "expired by the wall clock")
        var unchecked = table(retention: 500)
        _ = unchecked.merge([departure], wallMillis: 10_000, expiryWallMillis: .some(nil))
        #expect(unchecked["c"]?.status == .left, "kept while the clock cannot say")
        var behind = table(retention: 500)
        _ = behind.merge([departure], wallMillis: 10_000, expiryWallMillis: 1_200)
        #expect(behind["c"]?.status == .left, "not expired by the members' time")
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var before: [MemberRecord]
        var incoming: [MemberRecord]
        var changes: [Membership.Change]
        var announced: Int
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a new member joins", before: [], incoming: [record("b")], changes: [.joined(record("b"))], announced: 1),
        Row(name: "a known record changes nothing (gossip stops)", before: [record("b")], incoming: [record("b")], changes: [], announced: 0),
        Row(name: "an older life changes nothing", before: [record("b", epoch: 5)], incoming: [record("b", epoch: 4)], changes: [], announced: 0),
        Row(name: "a restart at the same address", before: [record("b")], incoming: [record("b", epoch: 2)], changes: [.restarted(record("b", epoch: 2))], announced: 1),
        Row(name: "a restart elsewhere", before: [record("b")], incoming: [record("b", epoch: 2, port: 8000)], changes: [.moved(record("b", epoch: 2, port: 8000))], announced: 1),
        Row(name: "a departure", before: [record("b")], incoming: [record("b", status: .left)], changes: [.left(record("b", status: .left))], announced: 1),
        Row(name: "a departure beats its own life's active record", before: [record("b", status: .left)], incoming: [record("b")], changes: [], announced: 0),
        Row(name: "a return after leaving", before: [record("b", status: .left)], incoming: [record("b", epoch: 2)], changes: [.joined(record("b", epoch: 2))], announced: 1),
        Row(name: "a forget", before: [record("b")], incoming: [record("b", status: .forgotten)], changes: [.forgotten(record("b", status: .forgotten))], announced: 1),
        Row(name: "a forgotten member is not brought back by stale gossip", before: [record("b", status: .forgotten)], incoming: [record("b")], changes: [], announced: 0),
        Row(name: "our own record from others changes nothing", before: [], incoming: [record("a")], changes: [], announced: 0),
    ]

    @Test(arguments: rows) func merging(_ row: Row) {
        var membership = table()
        _ = membership.merge(row.before, wallMillis: 0)
        let result = membership.merge(row.incoming, wallMillis: 0)
        #expect(result.changes == row.changes)
        #expect(result.announce.count == row.announced)
        #expect(!result.reasserted)
    }

    /// A record whose key is trusted here as another node's is refused, of a member or of this
    /// node itself (no re-assertion, so no identity clash): only a process holding that other
    /// node's key can announce it (helper-62: it replaced the real member's record, and made the
    /// real node refuse its writes). A key trusted for no one, or for the record's own id,
    /// merges as before (a key being rotated).
    @Test func aRecordWithAnotherNodesKeyIsRefused() {
        func keyed(_ node: NodeID, _ key: UInt8, epoch: UInt64 = 1) -> MemberRecord {
            var record = Self.record(node, epoch: epoch, port: 9000)
            record.publicKey = [UInt8](repeating: key, count: 32)
            return record
        }
        let owners: [[UInt8]: NodeID] = [[UInt8](repeating: 1, count: 32): "b", [UInt8](repeating: 3, count: 32): "c"]
        var membership = table()
        _ = membership.merge([keyed("b", 1)], wallMillis: 0, keyOwners: owners)
        let impostor = membership.merge([keyed("b", 3, epoch: 2)], wallMillis: 0, keyOwners: owners)
        #expect(impostor.changes.isEmpty && impostor.announce.isEmpty)
        #expect(impostor.impersonations == [Membership.Impersonation(record: keyed("b", 3, epoch: 2), keyOwner: "c")])
        #expect(membership[NodeID("b")] == keyed("b", 1), "the member's own record stays")

        let ofUs = membership.merge([keyed("a", 3, epoch: 5)], wallMillis: 0, keyOwners: owners)
        #expect(!ofUs.reasserted && ofUs.impersonations.count == 1 && membership.local.epoch == 1)

        let rotated = membership.merge([keyed("b", 7, epoch: 3)], wallMillis: 0, keyOwners: owners)
        #expect(rotated.impersonations.isEmpty && rotated.changes == [.moved(keyed("b", 7, epoch: 3))], "a key trusted for no one")
    }

    @Test func aLiveNodeReassertsItselfAgainstAForgetOfItself() {
        var membership = table()
        let result = membership.merge([Self.record("a", status: .forgotten)], wallMillis: 99)
        #expect(result.reasserted)
        #expect(membership.local.status == .active && membership.local.epoch == 99)
        #expect(result.announce == [membership.local])
    }

    @Test func forgetRefusesItselfTheUnknownAndTheLiving() {
        var membership = table()
        _ = membership.merge([Self.record("b"), Self.record("c")], wallMillis: 0)
        #expect(throws: Membership.ForgetRefusal.isSelf) { try membership.forget("a", isAlive: false, wallMillis: 0) }
        #expect(throws: Membership.ForgetRefusal.unknown) { try membership.forget("z", isAlive: false, wallMillis: 0) }
        #expect(throws: Membership.ForgetRefusal.stillAlive) { try membership.forget("b", isAlive: true, wallMillis: 0) }
        let tombstone = try? membership.forget("c", isAlive: false, wallMillis: 40)
        #expect(tombstone?.status == .forgotten)
        #expect(tombstone?.epoch == 40, "dated by the forget, so it expires a retention after it")
        #expect(membership.listed.map(\.node) == ["b"])
        #expect(membership.active.map(\.node) == ["b"])
    }

    @Test func leavingMarksOurOwnRecord() {
        var membership = table()
        let before = membership.digest
        let departed = membership.leave(wallMillis: 50)
        #expect(departed.status == .left && departed.epoch == 50, "dated by the departure")
        #expect(departed.supersedes(Self.record("a")), "it wins over this life's active record")
        #expect(membership.digest != before)
        var early = table()
        #expect(early.leave(wallMillis: 0).epoch == 1, "never below the life's own epoch")
    }

    // MARK: Departures past the retention (here 100 ms)

    struct ExpiryRow: Sendable, CustomTestStringConvertible {
        var name: String
        var before: [MemberRecord]
        var incoming: [MemberRecord]
        var wallMillis: UInt64
        var changes: [Membership.Change]
        var held: [NodeID]
        var testDescription: String { name }
    }

    static let expiryRows: [ExpiryRow] = [
        ExpiryRow(name: "a departure within the retention is kept", before: [], incoming: [record("b", epoch: 10, status: .left)],
                  wallMillis: 110, changes: [.left(record("b", epoch: 10, status: .left))], held: ["b"]),
        ExpiryRow(name: "an expired departure is not kept (no one hands it back)", before: [], incoming: [record("b", epoch: 10, status: .left)],
                  wallMillis: 111, changes: [], held: []),
        ExpiryRow(name: "an expired forget is not kept", before: [], incoming: [record("b", epoch: 10, status: .forgotten)],
                  wallMillis: 5_000, changes: [], held: []),
        ExpiryRow(name: "an expired departure still ends the life it replaces", before: [record("b", epoch: 5)],
                  incoming: [record("b", epoch: 10, status: .left)], wallMillis: 5_000, changes: [.expired(record("b", epoch: 5))], held: []),
        ExpiryRow(name: "an expired departure of an earlier life changes nothing", before: [record("b", epoch: 20)],
                  incoming: [record("b", epoch: 10, status: .left)], wallMillis: 5_000, changes: [], held: ["b"]),
        ExpiryRow(name: "an active record never expires", before: [], incoming: [record("b", epoch: 10)],
                  wallMillis: 5_000, changes: [.joined(record("b", epoch: 10))], held: ["b"]),
    ]

    @Test(arguments: expiryRows) func expiry(_ row: ExpiryRow) {
        var membership = table(retention: 100)
        _ = membership.merge(row.before, wallMillis: 0)
        let digest = membership.digest
        let result = membership.merge(row.incoming, wallMillis: row.wallMillis)
        #expect(result.changes == row.changes)
        #expect(result.announce.count == (row.held.isEmpty || row.changes.isEmpty ? 0 : 1), "an expiry is not gossiped")
        #expect(membership.allRecords.dropFirst().map(\.node) == row.held)
        #expect((membership.digest == digest) == (row.changes.isEmpty))
    }

    @Test func departuresExpireOneRetentionAfterTheyWereWritten() {
        var membership = table(retention: 100)
        #expect(membership.nextExpiry == nil)
        _ = membership.merge([Self.record("b", epoch: 10, status: .left), Self.record("c", epoch: 30, status: .forgotten),
                              Self.record("d", epoch: 1)], wallMillis: 50)
        #expect(membership.nextExpiry == 111, "the first millisecond the oldest departure is expired")
        #expect(membership.expireDepartures(wallMillis: 110).isEmpty, "kept through its last millisecond")
        #expect(membership.expireDepartures(wallMillis: 111).map(\.node) == ["b"])
        #expect(membership.nextExpiry == 131)
        #expect(membership.expireDepartures(wallMillis: 10_000).map(\.node) == ["c"])
        #expect(membership.nextExpiry == nil)
        #expect(membership.active.map(\.node) == ["d"], "active members stay, however old")
    }

    /// Two members whose clocks differ: the one ahead drops a departure first and then ignores
    /// it from the other, which drops it on its own a moment later; neither brings it back.
    @Test func departuresDoNotBounceBetweenMembersWhoseClocksDiffer() {
        var ahead = table("x", retention: 100), behind = table("y", retention: 100)
        let departure = Self.record("b", epoch: 10, status: .left)
        _ = ahead.merge([departure], wallMillis: 20)
        _ = behind.merge([departure], wallMillis: 20)
        #expect(ahead.expireDepartures(wallMillis: 115).count == 1)
        _ = ahead.merge(behind.allRecords, wallMillis: 115)
        #expect(ahead["b"] == nil, "not taken back from a member that still holds it")
        #expect(behind.expireDepartures(wallMillis: 111).count == 1)
        #expect(ahead["b"] == nil && behind["b"] == nil)
    }

    /// Tables that saw the same records in any order and grouping are equal (and so their
    /// digests): gossip converges whatever way it travels.
    @Test func mergeIsOrderInsensitive() async {
        let records: [MemberRecord] = (0..<6).flatMap { n in
            [MemberRecord.Status.active, .left, .forgotten].flatMap { status in
                (1...2).map { epoch in Self.record(NodeID(rawValue: "n\(n)")!, epoch: UInt64(epoch), status: status, port: UInt16(7000 + epoch)) }
            }
        }
        await propertyCheck(input: Gen.int(in: 0...Int(UInt32.max))) { seed in
            var generator = SplitMix(seed: UInt64(seed))
            var one = table("x"), other = table("x")
            _ = one.merge(records.shuffled(using: &generator), wallMillis: 0)
            for record in records.shuffled(using: &generator) { _ = other.merge([record], wallMillis: 0) }
            #expect(one.digest == other.digest)
            #expect(one.allRecords == other.allRecords)
        }
    }

    // MARK: Relays

    // MARK: Probes of members ended on another's word

    /// A departure or move of a member taken from another member's records (relayed, or
    /// forged while a partition hid the member) leaves its last own address asked to join, at
    /// 2, 4, 8 ... 60 s, so a live member sees the record and re-asserts. The simulator found
    /// two sides of a healed partition each holding the other as `left` from a hostile
    /// member's records, and dialling no one (seed 85 of `--faults hostile,partition,crash,loss`).
    @Test(arguments: [MemberRecord.Status.left, .forgotten, .active])
    func aMemberEndedOnAnothersWordIsProbedWithBackOff(status: MemberRecord.Status) {
        var membership = table()
        let own = Self.record("b", epoch: 1)
        _ = membership.merge([own], wallMillis: 1_000, sender: "b")
        let forged = Self.record("b", epoch: 2, status: status, port: status == .active ? 1 : 7000)
        _ = membership.merge([forged], wallMillis: 1_000, sender: "c")
        var asked: [UInt64] = []
        for wall in stride(from: UInt64(1_000), through: 200_000, by: 500) where !membership.dueProbes(wallMillis: wall, heardDirectly: []).isEmpty {
            asked.append(wall - 1_000)
        }
        #expect(asked == [0, 2_000, 6_000, 14_000, 30_000, 62_000, 122_000, 182_000])
        #expect(membership.probes["b"]?.record == own)
        let reasserted = Self.record("b", epoch: 3)
        _ = membership.merge([reasserted], wallMillis: 200_000, sender: "b")
        #expect(membership.dueProbes(wallMillis: 300_000, heardDirectly: []).isEmpty && membership.probes.isEmpty)
    }

    @Test func noProbeForAMembersOwnWordAndNoneOnceItIsHeardOrPastTheProbeLife() {
        var membership = table()
        _ = membership.merge([Self.record("b", epoch: 1), Self.record("c", epoch: 1)], wallMillis: 1_000, sender: "b")
        _ = membership.merge([Self.record("b", epoch: 2, status: .left)], wallMillis: 1_000, sender: "b")
        #expect(membership.probes.isEmpty, "its own leave")
        _ = membership.merge([Self.record("c", epoch: 2, status: .left)], wallMillis: 1_000, sender: "d")
        #expect(membership.dueProbes(wallMillis: 1_000, heardDirectly: []).map(\.node) == ["c"])
        #expect(membership.dueProbes(wallMillis: 9_000, heardDirectly: ["c"]).isEmpty && membership.probes.isEmpty)
        _ = membership.merge([Self.record("c", epoch: 4)], wallMillis: 1_000, sender: "c")
        _ = membership.merge([Self.record("c", epoch: 5, status: .forgotten)], wallMillis: 1_000, sender: "d")
        #expect(membership.probes.keys.contains("c"))
        #expect(membership.dueProbes(wallMillis: 1_000 + Membership.probeLife, heardDirectly: []).isEmpty && membership.probes.isEmpty)
    }

    @Test func probesAreBounded() {
        var membership = table()
        let nodes = (0..<40).map { NodeID(rawValue: "m\($0)")! }
        _ = membership.merge(nodes.map { Self.record($0) }, wallMillis: 1_000, sender: nil)
        for (index, node) in nodes.enumerated() {
            _ = membership.merge([Self.record(node, epoch: 2, status: .left)], wallMillis: 1_000 + UInt64(index), sender: "z")
        }
        #expect(membership.probes.count == Membership.maxProbes)
        #expect(Set(membership.probes.keys) == Set(nodes.suffix(Membership.maxProbes)), "the newest kept")
    }

    @Test func aMemberWeCannotHearIsTakenThroughOneThatCan() {
        let views: [RelayPlanner.View] = [
            .init(node: "a", directlySilent: true, hears: ["b"]),
            .init(node: "b", directlySilent: false, hears: ["a", "c"]),
            .init(node: "c", directlySilent: false, hears: ["a", "b"]),
        ]
        #expect(RelayPlanner.plan(views, current: [:]) == ["a": "b"], "the first candidate by id")
        #expect(RelayPlanner.plan(views, current: ["a": "c"]) == ["a": "c"], "a working relay is kept")
    }

    @Test func noRelayWhenEveryoneHearsEveryone() {
        let views: [RelayPlanner.View] = [
            .init(node: "a", directlySilent: false, hears: ["b"]),
            .init(node: "b", directlySilent: false, hears: ["a"]),
        ]
        #expect(RelayPlanner.plan(views, current: ["a": "b"]).isEmpty)
    }

    @Test func noRelayWhenNobodyHearsIt() {
        let views: [RelayPlanner.View] = [
            .init(node: "a", directlySilent: true, hears: []),
            .init(node: "b", directlySilent: false, hears: []),
            .init(node: "c", directlySilent: true, hears: ["a"]),
        ]
        #expect(RelayPlanner.plan(views, current: [:]).isEmpty, "c hears a but we cannot hear c")
    }
}

/// A seeded generator for shuffles in property tests.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
