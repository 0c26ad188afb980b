import Foundation
import GRDB
import Synchronization
import Testing
@testable import ReplicaCore

/// Faults that used to pass unseen: input that is rejected must change nothing, forged origins
/// are dropped and counted, and a node whose clock is wrong refuses to write rather than reorder
/// history.
@Suite(.serialized) struct NoSilentFaultsTests {
    /// A replica on loopback `port` with one seed, and short timings: a member is down after
    /// 0.5 s (so isolated after 1 s), and writes wait at most 0.3 s for a clock comparison.
    static func seeded(
        _ id: NodeID, _ port: UInt16, seed: UInt16, requireClockCheck: Bool = false, grace: Duration = .milliseconds(300)
    ) throws -> Replica {
        var configuration = ReplicaConfiguration(
            node: id, listen: Endpoint(host: "127.0.0.1", port: port), peers: [Endpoint(host: "127.0.0.1", port: seed)], storage: .memory)
        configuration.heartbeatInterval = .milliseconds(100)
        configuration.suspectAfter = .milliseconds(300)
        configuration.downAfter = .milliseconds(500)
        configuration.clockCheckGrace = grace
        configuration.requireClockCheck = requireClockCheck
        return try Replica(configuration)
    }

    /// A seed that never answers (nothing listens at its address) left the node alone with a
    /// passing health check. It is now an `isolated` problem naming the seed, cleared once a
    /// member is heard.
    @Test func aNodeWhoseSeedsNeverAnswerIsListedAsIsolated() async throws {
        let (aPort, bPort) = (testPorts.pair(), testPorts.pair())
        let a = try Self.seeded("a", aPort, seed: bPort)
        try await a.write("offline", payload: Array("1".utf8))  // offline-first: accepted after the grace
        #expect(await eventually { await a.status().problems.contains { $0.kind == .isolated } })
        let listed = try #require(await a.status().problems.first { $0.kind == .isolated })
        #expect(listed.subject == "members")
        #expect(listed.message.contains("127.0.0.1:\(bPort)"), "names the seed that never answered: \(listed.message)")
        #expect(listed.message.contains("unchecked clock"), "says its writes carry a clock never compared: \(listed.message)")
        #expect(!listed.failsHealth, "an isolated node still serves")

        let b = try Self.seeded("b", bPort, seed: aPort)
        #expect(await eventually { await !a.status().problems.contains { $0.kind == .isolated } }, "b heard: no longer isolated")
        #expect(await !b.status().problems.contains { $0.kind == .isolated })
        await a.shutdown()
        await b.shutdown()
    }

    /// `requireClockCheck`: a node that has reached no member since it started refuses writes
    /// once the grace is over (rather than stamping them with a clock nobody compared), and
    /// takes them as soon as its clock agrees with a member's.
    @Test func aNodeThatRequiresAClockCheckRefusesWritesUntilItHasOne() async throws {
        let (aPort, bPort) = (testPorts.pair(), testPorts.pair())
        let a = try Self.seeded("a", aPort, seed: bPort, requireClockCheck: true)
        await #expect(throws: ReplicaError.clockUnchecked) { try await a.write("k", payload: Array("1".utf8)) }
        #expect(try await a.entry(for: "k") == nil, "nothing written")

        let b = try Self.seeded("b", bPort, seed: aPort, requireClockCheck: true)
        #expect(await eventually { (try? await a.write("k", payload: Array("2".utf8))) != nil }, "compared with b: writes go ahead")
        #expect(await eventually { (try? await b.entry(for: "k"))?.payload == Array("2".utf8) })
        await a.shutdown()
        await b.shutdown()
    }

    /// `requireClockCheck`, during the grace: writes wait for the first comparison, and health
    /// says so (it was green for that while; helper-70). Once a member is compared with, the
    /// problem clears and health is green.
    @Test func aNodeThatRequiresAClockCheckFailsHealthWhileItsWritesWait() async throws {
        let (aPort, bPort) = (testPorts.pair(), testPorts.pair())
        let a = try Self.seeded("a", aPort, seed: bPort, requireClockCheck: true, grace: .seconds(60))
        let waiting = await eventually { await a.health().problems.contains { $0.kind == .clock && $0.message.contains("writes wait") } }
        #expect(waiting)
        #expect(await !a.health().healthy)
        let b = try Self.seeded("b", bPort, seed: aPort)
        #expect(await eventually { await a.health().healthy }, "compared with b")
        await a.shutdown()
        await b.shutdown()
    }

    /// The wiring of the discovery bounds (`SeedRetirement`, whose table LeaveAndSeedTests
    /// checks): a flood of forged beacons, each naming another address, opens at most one seed a
    /// second (each seed is a socket pair: helper-70's flood used up libzmq's 1,023 sockets).
    /// A malformed datagram sent last is counted once the flood before it has been read.
    @Test func aFloodOfBeaconsOpensAtMostOneSeedASecond() async throws {
        let (port, discovery) = (testPorts.pair(), testPorts.pair())
        var configuration = ReplicaConfiguration(node: "a", listen: Endpoint(host: "127.0.0.1", port: port), peers: [], storage: .memory)
        configuration.discoveryPort = discovery
        let a = try Replica(configuration)
        let codec = WireCodec()
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(sender >= 0)
        defer { close(sender) }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = discovery.bigEndian
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        func send(_ bytes: [UInt8]) {
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        for index in 0..<40 {
            send(codec.encode(Beacon(node: NodeID(rawValue: "forged\(index)")!, host: "127.0.0.1", port: UInt16(40_000 + index), publicKey: nil)))
        }
        send([0xFF])
        #expect(await eventually { await a.status().counters.malformedDropped == 1 }, "the flood was read")
        let seeds = await a.status().pendingSeeds
        #expect(!seeds.isEmpty && seeds.count <= 3, "one seed a second, not one a beacon: \(seeds)")
        await a.shutdown()
    }

    /// A heartbeat from a clock two minutes ahead keeps the sender alive and shows its clock, and
    /// does nothing else: no gap, no repair, no new incarnation or sequence taken (so no sync),
    /// although it announces a sequence jump and a new incarnation.
    @Test func aFutureDatedHeartbeatChangesNothing() async throws {
        let peer = try FakePeer()
        let replica = try peer.makeNode()
        #expect(try await peer.waitUntilHeard(by: replica))
        #expect(try await peer.waitUntilStartUpSyncsEnd(on: replica))
        let before = await replica.status()
        for _ in 0..<5 {
            try peer.heartbeat(sequence: 500, incarnation: UUID(), aheadMillis: 120_000)
            try await Task.sleep(for: .milliseconds(100))
            try peer.keepAlive()
        }
        #expect(await eventually { await replica.counterSnapshot().skewedHeartbeats >= 1 })
        let after = await replica.status()
        #expect(after.peers.first?.state == .alive)
        #expect(after.peers.first?.sequenceGaps == before.peers.first?.sequenceGaps, "no gap counted")
        #expect(peer.repairsAsked.isEmpty, "no repair asked")
        #expect(after.peers.first?.incarnation == before.peers.first?.incarnation, "its incarnation was not taken")
        #expect(after.peers.first?.lastSequence == before.peers.first?.lastSequence, "nor its sequence")
        #expect(after.peers.first?.skewedHeartbeats ?? 0 >= 1)
    }

    /// A bad value's report and a later good value's clearing reach the replica in tasks of
    /// their own: the later decision stands whatever order they arrive in (a stale load error
    /// stayed in `status` for good). The same for a refused save overtaken by the clearing of a
    /// later save that was made (helper-63).
    @Test(arguments: [true, false])
    func aProblemClearedLaterIsNotBroughtBackByAnEarlierReport(loadError: Bool) async throws {
        let replica = try makeReplicas(1)[0]
        func settle(_ message: String?, _ ticket: UInt64) async {
            if loadError {
                await replica.settleLoadError("k", message: message, ticket: ticket)
            } else {
                await replica.settleRefusedSave("k", message: message, ticket: ticket)
            }
        }
        func listed() async -> [String] {
            let status = await replica.status()
            return (loadError ? status.loadErrors : status.saveErrors).map(\.message)
        }
        let bad = replica.problemTicket()
        let good = replica.problemTicket()
        await settle(nil, good)
        await settle("bad", bad)
        #expect(await listed().isEmpty)
        await settle("bad again", replica.problemTicket())
        #expect(await listed() == ["bad again"])
        await replica.shutdown()
    }

    /// A data directory deleted under a running node (helper-57: unnoticed, and everything it
    /// committed afterwards was gone at the next start) is a `store` problem that fails health;
    /// the store itself says so for a file put in its place.
    @Test func aDataDirectoryDeletedUnderTheNodeIsAStoreProblem() async throws {
        let directory = TemporaryDirectory("deleted-under")
        defer { directory.remove() }
        let replica = try ReplicaLayout(count: 1, storage: { _ in .directory(directory.url) }).start(0)
        try await replica.write("before", payload: Array("1".utf8))
        #expect(await replica.health().healthy)
        try FileManager.default.removeItem(at: directory.url)
        #expect(await eventually { await replica.status().problems.contains { $0.kind == .store && $0.message.contains("was deleted or moved away") } })
        #expect(await !replica.health().healthy)
        await replica.shutdown()

        let other = TemporaryDirectory("replaced-under")
        defer { other.remove() }
        let store = try SQLiteStore(directory: other.url, node: "n1")
        #expect(store.fileNoLongerInPlace == nil)
        let file = other.url.appendingPathComponent(SQLiteStore.fileName)
        try FileManager.default.moveItem(at: file, to: other.url.appendingPathComponent("moved"))
        try Data("another file".utf8).write(to: file)
        #expect(store.fileNoLongerInPlace == "was replaced by another file")
        // Its stop records nothing: the record would describe the other file.
        #expect(store.closeForWriting() == "the database file was replaced by another file")
        #expect(!FileManager.default.fileExists(atPath: other.url.appendingPathComponent(CleanStopRecord.fileName).path))
    }

    /// A data directory moved away and back holds the same file, which got every commit
    /// meanwhile: the `store` problem clears (helper-66: it stayed until a restart).
    @Test func aDataDirectoryMovedBackClearsItsStoreProblem() async throws {
        let directory = TemporaryDirectory("moved-back")
        defer { directory.remove() }
        let aside = directory.url.deletingLastPathComponent().appendingPathComponent(directory.url.lastPathComponent + "-aside")
        defer { try? FileManager.default.removeItem(at: aside) }
        let replica = try ReplicaLayout(count: 1, storage: { _ in .directory(directory.url) }).start(0)
        try FileManager.default.moveItem(at: directory.url, to: aside)
        #expect(await eventually { await !replica.health().healthy })
        try await replica.write("meanwhile", payload: Array("1".utf8))
        try FileManager.default.moveItem(at: aside, to: directory.url)
        #expect(await eventually { await replica.health().healthy })
        #expect(await !replica.status().problems.contains { $0.kind == .store })
        await replica.shutdown()
        let reopened = try SQLiteStore(directory: directory.url, node: "r1")
        #expect(try reopened.entry(for: "meanwhile")?.payload == Array("1".utf8))
    }

    /// `status` says how much space is left where the data directory is (helper-68: a disk at
    /// 100% showed nowhere while small writes still fit in the log), flagged low under 5% or
    /// 256 MiB; a memory store has none.
    @Test func statusShowsTheDiskSpaceLeft() async throws {
        let directory = TemporaryDirectory("disk-space")
        defer { directory.remove() }
        let replica = try ReplicaLayout(count: 1, storage: { _ in .directory(directory.url) }).start(0)
        let disk = try #require(await replica.status().disk)
        #expect(disk.totalBytes > 0 && disk.freeBytes <= disk.totalBytes)
        await replica.shutdown()
        let inMemory = try makeReplicas(1)[0]
        #expect(await inMemory.status().disk == nil)
        await inMemory.shutdown()
        let gib: UInt64 = 1 << 30
        #expect(DiskSpace(freeBytes: 4 * gib, totalBytes: 100 * gib).isLow, "under 5%")
        #expect(!DiskSpace(freeBytes: 6 * gib, totalBytes: 100 * gib).isLow)
        #expect(DiskSpace(freeBytes: 200 << 20, totalBytes: 2 * gib).isLow, "under 256 MiB")
        #expect(!DiskSpace(freeBytes: 2 * gib, totalBytes: 2 * gib).isLow, "an empty file system is not low")
        // A small volume: a quarter of it, not 256 MiB (helper-72: always LOW under ~5 GiB).
        #expect(!DiskSpace(freeBytes: 60 << 20, totalBytes: 100 << 20).isLow, "60% free of a small volume")
        #expect(DiskSpace(freeBytes: 20 << 20, totalBytes: 100 << 20).isLow, "under a quarter of a small volume")
    }

    /// A key with U+0000 is refused with a clear error: SQLite would store it whole but read it
    /// back as the shorter key before the NUL, another key's value.
    @Test func aKeyWithANulIsRefused() async throws {
        let replica = try makeReplicas(1)[0]
        let error = await #expect(throws: ReplicaError.self) { try await replica.write("a\u{0}b", payload: [0x31]) }
        #expect(error?.description.contains("U+0000") == true)
        #expect(try await replica.entry(for: "a") == nil)
        await replica.shutdown()
    }

    /// Writes made while the node leaves are refused: members hang up on reading the departure,
    /// so what came after it on the stream would be acknowledged and never reach anyone.
    @Test func writesWhileLeavingAreRefused() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        await replicas[0].shutdown()  // it will not answer: the leave waits its whole timeout
        let leaving = Task { await replicas[1].leave() }
        #expect(await eventually { await replicas[1].status().membership == "left" })
        await #expect(throws: ReplicaError.leaving) { try await replicas[1].write("late", payload: [0x31]) }
        await #expect(throws: ReplicaError.leaving) { try await replicas[1].addToCounter("visits", delta: 1) }
        #expect(await leaving.value.acknowledged.isEmpty)
        await replicas[1].shutdown()
    }

    /// A write the clock check holds (clocks not compared yet) when `leave` begins is refused
    /// as leaving. (helper-69: the departure went out at once, with nothing published to hand
    /// over, and the write, committed when the check passed, was acknowledged on a node that
    /// had left: no member ever got it.) a heartbeats every 4 s, so b hears it at once but
    /// measures its clock only at its next heartbeat.
    @Test func aWriteHeldForTheClockCheckIsRefusedByLeave() async throws {
        let replicas = try makeReplicas(2, configure: { index, configuration in
            if index == 0 { configuration.heartbeatInterval = .seconds(4) }
            configuration.clockCheckGrace = .seconds(30)
            configuration.suspectAfter = .seconds(10)
            configuration.downAfter = .seconds(20)
        })
        let (a, b) = (replicas[0], replicas[1])
        #expect(await eventually { await b.status().clock.verdict == "unverified" })
        let held = Task { try await b.write("held", payload: [0x31]) }
        #expect(await eventually {
            let queued = await b.core.commits.writes.count
            return await b.status().clock.verdict == "unverified" && queued == 1
        })
        _ = await b.leave()
        await #expect(throws: ReplicaError.leaving) { try await held.value }
        #expect(try await a.entry(for: "held") == nil)
        await a.shutdown()
        await b.shutdown()
    }

    /// A node whose writes no member has when the hand-off time is up does not leave: the
    /// only copy of its writes would be its data directory. It says so, stays a member and
    /// accepts writes again; `force` leaves anyway. (It left, and reported success.)
    @Test func aNodeNoMemberHoldsTheWritesOfDoesNotLeave() async throws {
        let replicas = try makeReplicas(2, configure: { _, configuration in configuration.leaveTimeout = .milliseconds(500) })
        #expect(await connected(replicas))
        await replicas[0].shutdown()
        try await replicas[1].write("only-here", payload: [0x31])
        let departure = await replicas[1].leave()
        #expect(!departure.left)
        #expect(departure.published == 1 && departure.holding.isEmpty)
        #expect(await replicas[1].status().membership == "active")
        #expect(await !replicas[1].isShutDown)
        try await replicas[1].write("after", payload: [0x32])

        let forced = await replicas[1].leave(force: true)
        #expect(forced.left && forced.holding.isEmpty)
        #expect(await replicas[1].isShutDown)
    }

    /// While the hand-off waits (here for a member, alive, that never reports holding our
    /// writes), `status` says `leaving` (it said `active` while writes were refused). A second
    /// call with `force` joins the first and makes it leave when the hand-off time is up, where
    /// alone it would have stayed.
    @Test func aWaitingLeaveShowsInStatusAndAForcedSecondCallMakesItLeave() async throws {
        let peer = try FakePeer()
        let replica = try peer.makeNode(leaveTimeout: .seconds(2))
        #expect(try await peer.waitUntilHeard(by: replica))
        try await replica.write("only-here", payload: [0x31])
        #expect(try await eventually {
            try peer.keepAlive()
            return await replica.status().peers.first?.state == .alive
        })
        let first = Task { await replica.leave() }
        #expect(try await eventually {
            try peer.keepAlive()
            return await replica.status().membership == "leaving"
        })
        await #expect(throws: ReplicaError.leaving) { try await replica.write("late", payload: [0x32]) }
        let forced = Task { await replica.leave(force: true) }
        #expect(try await eventually(timeout: .seconds(5)) {
            try peer.keepAlive()
            return await replica.isShutDown
        })
        let (waited, second) = (await first.value, await forced.value)
        #expect(waited.left && second.left, "the waiting call gets the forced result")
        #expect(waited.holding.isEmpty && waited.asked == ["fake"])
        #expect(await replica.status().membership == "left")
    }

    /// A second `leave` while the first waits joins it, and one after it gets the same count: the
    /// members asked that answered (one of two here; the other was stopped and never answers).
    /// The second call used to replace the first, whose caller then waited for ever.
    @Test func aSecondLeaveJoinsTheFirstAndGetsItsCount() async throws {
        let replicas = try makeReplicas(3)
        #expect(await connected(replicas))
        await replicas[0].shutdown()
        let first = Task { await replicas[2].leave() }
        #expect(await eventually { await replicas[2].status().membership == "left" })
        let second = Task { await replicas[2].leave() }
        #expect(await first.value.acknowledged == ["r2"])
        #expect(await second.value == first.value)
        #expect(await replicas[2].leave() == first.value)
        await replicas[1].shutdown()
    }

    /// A store that fails its commits (a full disk; here a trigger refuses every row): received
    /// entries dropped during the back-off are counted, and a batch that writes nothing (every
    /// entry already stored) does not report the store as working again. It did: `health`
    /// flapped to healthy on a node that could not write.
    @Test func aCommitThatWritesNothingDoesNotClearAFailingStore() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = ReplicaConfiguration(node: "n1", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()), storage: .directory(directory.url))
        configuration.heartbeatInterval = .milliseconds(200)
        let replica = try Replica(configuration)
        let stored = try await replica.write("k", payload: Array("1".utf8))
        let database = try DatabaseQueue(path: directory.url.appendingPathComponent(SQLiteStore.fileName).path)
        try await database.write { try $0.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON entries BEGIN SELECT RAISE(FAIL, 'refused'); END") }
        await #expect(throws: ReplicaError.self) { try await replica.write("x", payload: Array("2".utf8)) }
        #expect(await !replica.health().healthy)

        await replica.accept([stored], from: "n2")  // during the back-off: dropped, and counted
        #expect(await replica.counterSnapshot().inboundDroppedOnFailedCommit == 1)
        #expect(await eventually { await replica.core.commits.acceptsInbound(now: .now) })
        await replica.accept([stored], from: "n2")
        await replica.flush()
        #expect(await !replica.health().healthy, "an entry already stored wrote nothing: the store may still fail")

        try await database.write { try $0.execute(sql: "DROP TRIGGER refuse") }
        _ = try await replica.write("y", payload: Array("3".utf8))
        #expect(await replica.health().healthy)
        try database.close()
        await replica.shutdown()
    }

    /// The store's file damaged under a running replica: the read that meets it fails, and the
    /// replica lists a `store` problem that fails `health` (it used to stay healthy, serving
    /// reads that failed, until a restart found the damage).
    @Test func aStoreDamagedWhileRunningFailsHealth() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = try SQLiteStoreTests.storeInOneFile(directory.url)
        let replica = try Replica(ReplicaConfiguration(
            node: "n1", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()), storage: .directory(directory.url)))
        #expect(await replica.health().healthy)

        #expect(try SQLiteStoreTests.damageCells(of: file) == 3)
        #expect(throws: DatabaseError.self) { _ = try replica.reader.entries(prefix: "") }
        let health = await replica.health()
        #expect(!health.healthy)
        let problem = try #require(health.problems.first { $0.kind == .store })
        #expect(problem.subject == file.path && problem.failsHealth)
        #expect(problem.message.contains("Restart the node"))
        #expect(await replica.status().problems.contains { $0.kind == .store })
        await replica.shutdown()
    }

    /// On the fake member's own connection, updates that claim to be written by another node
    /// (a third one, or the receiver itself) are dropped and counted, never stored.
    @Test func aForgedOriginIsDroppedAndCounted() async throws {
        let peer = try FakePeer()
        let replica = try peer.makeNode()
        #expect(try await peer.waitUntilHeard(by: replica))
        let now = HybridTimestamp(wallMillis: UInt64(Date().timeIntervalSince1970 * 1000), logical: 0)
        let forged = ["mallory", replica.identity.node].map { origin in
            Update(origin: origin, sequence: 1, entry: Entry(key: "forged-\(origin)", version: Version(timestamp: now, node: origin), payload: [0x31]))
        }
        #expect(await eventually {
            for update in forged { try? peer.publish(update) }
            return await replica.counterSnapshot().forgedOriginsDropped >= 2
        })
        for update in forged { #expect(try await replica.entry(for: update.entry.key) == nil) }
        try peer.publish(peer.updates[0])
        #expect(await eventually { (try? await replica.entry(for: "key1")) != nil }, "the member's own updates still count")
    }

    /// A node of the three-node clock tests: quick heartbeats, one seed.
    private func configuration(_ node: NodeID, _ port: UInt16, _ seed: UInt16) -> ReplicaConfiguration {
        var configuration = ReplicaConfiguration(node: node, listen: Endpoint(host: "127.0.0.1", port: port),
                                                 peers: [Endpoint(host: "127.0.0.1", port: seed)], storage: .memory)
        configuration.heartbeatInterval = .milliseconds(200)
        return configuration
    }

    /// Nodes a, b and c, each seeded with another; b's wall clock is off by `offsetOfB()` ms
    /// (read at every use, so that a test can fix it).
    private func threeNodes(
        offsetOfB: @escaping @Sendable () -> Int64, configureB: (inout ReplicaConfiguration) -> Void = { _ in }
    ) throws -> (a: Replica, b: Replica, c: Replica) {
        let ports = (testPorts.pair(), testPorts.pair(), testPorts.pair())
        let a = try Replica(configuration("a", ports.0, ports.1))
        let c = try Replica(configuration("c", ports.2, ports.0))
        var b = configuration("b", ports.1, ports.0)
        b.wallClock = { UInt64(Int64(HybridLogicalClock.systemClock()) + offsetOfB()) }
        configureB(&b)
        return (a, try Replica(b), c)
    }

    /// Node b's clock runs 8 days ahead (its tombstones' retention is 7): a delete made on a
    /// reaches b and is kept, and b's sweep collects nothing, while its clock is skewed.
    /// (helper-69: b dropped the tombstone as expired and kept the deleted value, which came
    /// back on every member once they had collected theirs.) Nor do its departures expire.
    @Test func aClockFarAheadExpiresNoTombstone() async throws {
        let (a, b, c) = try threeNodes(offsetOfB: { 8 * 24 * 3600 * 1000 })
        #expect(await connected([a, b, c]))
        #expect(await eventually { await b.status().clock.verdict == "skewed" })
        try await a.write("deleted", payload: Array("1".utf8))
        #expect(await eventually { (try? await b.entry(for: "deleted"))?.isTombstone == false })
        try await a.write("deleted", payload: nil)
        #expect(await eventually { (try? await b.entry(for: "deleted"))?.isTombstone == true })
        #expect(await b.collectTombstones() == 0)
        #expect(await b.status().counters.expiredTombstonesDropped == 0)
        #expect(await b.expiryWallMillis(received: false) == nil)
        for replica in [a, b, c] { await replica.shutdown() }
    }

    /// Node b's clock runs 120 s ahead of a's and c's. It must not acknowledge a write (not even
    /// one made before it first compared clocks), it says why, a shows b's clock as a problem;
    /// once b's clock is fixed, its writes flow again within seconds, without a restart.
    @Test func aNodeWithAWrongClockRefusesWritesUntilItIsFixed() async throws {
        let skew = Mutex<Int64>(120_000)
        let (a, b, c) = try threeNodes(offsetOfB: { skew.withLock { $0 } })

        // Before b has compared clocks, its write waits, and is then refused; so is an increment.
        let earlyIncrement = Task { try await b.addToCounter("visits", delta: 5) }
        await #expect(throws: ReplicaError.self) { try await b.write("early", payload: Array("1".utf8)) }
        await #expect(throws: ReplicaError.self) { try await earlyIncrement.value }
        await #expect(throws: ReplicaError.self) { try await b.write("late", payload: Array("1".utf8)) }
        await #expect(throws: ReplicaError.self) { try await b.addToCounter("visits", delta: 7) }
        let bStatus = await b.status()
        #expect(bStatus.clock.verdict == "skewed")
        #expect(bStatus.problems.contains { $0.kind == .clock })
        #expect(!bStatus.problems.contains { $0.kind == .peerClock }, "a and c agree with the median: b's own clock is the wrong one")
        #expect(await !b.health().healthy)
        #expect(await eventually { await a.status().problems.contains { $0.kind == .peerClock && $0.subject == "b" } })
        #expect(await a.health().healthy, "another node's clock is not a's ill health")
        #expect(try await a.entry(for: "early") == nil)

        skew.withLock { $0 = 0 }  // the clock is fixed (stepped back)
        let fixed = ContinuousClock.now
        #expect(await eventually(timeout: .seconds(5)) { (try? await b.write("after", payload: Array("2".utf8))) != nil })
        #expect(ContinuousClock.now - fixed < .seconds(5))
        #expect(await eventually { (try? await a.entry(for: "after")) != nil })
        #expect(await b.health().healthy)
        // The refused increments count for nothing: they were cached as the slot's total, and
        // the next increment after the fix counted them again (5 + 7 + 1).
        try await b.addToCounter("visits", delta: 1)
        #expect(try await b.counter("visits").value == 1)
        for replica in [a, b, c] { await replica.shutdown() }
    }

    /// A node that wrote with its wall clock 2 h ahead (alone, so nothing checked it) keeps its
    /// hybrid clock there once the wall clock is fixed: what it stamps now, every member would
    /// refuse (then, 2 h later, let win over everything written meanwhile). It refuses its writes
    /// and lists the `clock` problem saying why and what to do, until the wall clock catches up.
    /// (It acknowledged them, they never replicated, and no node listed anything.)
    @Test func aNodeWhoseLogicalClockIsAheadRefusesWritesAndSaysSo() async throws {
        let offset = Mutex<Int64>(7_200_000)
        // Its seed is not there: after the grace, it writes with an unchecked clock.
        var configuration = ReplicaConfiguration(node: "cut-off", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()),
                                                 peers: [Endpoint(host: "127.0.0.1", port: testPorts.pair())], storage: .memory)
        configuration.wallClock = { UInt64(Int64(HybridLogicalClock.systemClock()) + offset.withLock { $0 }) }
        configuration.clockCheckGrace = .milliseconds(100)
        let replica = try Replica(configuration)
        #expect(await eventually { (try? await replica.write("while-ahead", payload: Array("1".utf8))) != nil })
        offset.withLock { $0 = 0 }  // fixed
        await #expect(throws: ReplicaError.self) { try await replica.write("after-fix", payload: Array("2".utf8)) }
        do {
            try await replica.write("after-fix", payload: Array("2".utf8))
        } catch let error as ReplicaError {
            guard case .clockAhead(let lead, let limit) = error else { Issue.record("\(error)"); return }
            #expect(lead > 7_100_000 && limit == 60_000)
            #expect(error.description.contains("ahead of its members' clocks"))
        }
        #expect(await eventually { await replica.status().problems.contains { $0.kind == .clock && $0.message.contains("logical clock") } })
        #expect(await !replica.health().healthy)
        offset.withLock { $0 = 7_200_000 }  // the wall clock catches up
        #expect(await eventually { await !replica.status().problems.contains { $0.kind == .clock } }, "listed no more")
        try await replica.write("caught-up", payload: Array("3".utf8))
        await replica.shutdown()

        // A node with nobody to compare with (an app alone whose clock was set back) is not held:
        // nobody would refuse what it stamps.
        let aloneOffset = Mutex<Int64>(7_200_000)
        var alone = ReplicaConfiguration(node: "alone", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()), peers: [], storage: .memory)
        alone.wallClock = { UInt64(Int64(HybridLogicalClock.systemClock()) + aloneOffset.withLock { $0 }) }
        let single = try Replica(alone)
        try await single.write("k", payload: Array("1".utf8))
        aloneOffset.withLock { $0 = 0 }
        try await single.write("k", payload: Array("2".utf8))
        #expect(try await single.entry(for: "k")?.payload == Array("2".utf8))
        await single.shutdown()
    }

    /// The members of such a node list it while they refuse what it wrote ahead, although its
    /// clock now agrees with theirs. (Its `peerClock` problem cleared once its clock was fixed,
    /// while every entry it wrote ahead was still refused.)
    @Test func membersListANodeWhoseEntriesTheyRefuseAsWrittenAhead() async throws {
        let offset = Mutex<Int64>(7_200_000)
        let ports = (testPorts.pair(), testPorts.pair())
        var bConfiguration = configuration("b", ports.1, ports.0)
        bConfiguration.wallClock = { UInt64(Int64(HybridLogicalClock.systemClock()) + offset.withLock { $0 }) }
        bConfiguration.clockCheckGrace = .milliseconds(100)
        let b = try Replica(bConfiguration)
        // a is not there yet: after the grace, b writes with an unchecked clock, 2 h ahead.
        #expect(await eventually { (try? await b.write("ahead", payload: Array("1".utf8))) != nil })
        offset.withLock { $0 = 0 }  // fixed, before any member compared it
        let a = try Replica(configuration("a", ports.0, ports.1))
        #expect(await eventually { await a.status().problems.contains { $0.kind == .peerClock && $0.subject == "b" && $0.message.contains("refused here") } })
        #expect(await eventually { await b.status().problems.contains { $0.kind == .clock && $0.message.contains("logical clock") } })
        #expect(try await a.entry(for: "ahead") == nil)
        for replica in [a, b] { await replica.shutdown() }
    }

    /// Node b's clock runs 120 s behind a's and c's, so a's writes look written in the future:
    /// b refuses them, even when a sync brings them. Once b's clock is fixed, a sync brings them
    /// again. (Before, a sync that completed while they were refused left a mark past them, and
    /// every later sync asked only for what came after: they never arrived.)
    @Test func entriesRefusedByABehindClockArriveOnceItIsFixed() async throws {
        let behind = Mutex<Int64>(-120_000)
        // a's heartbeats look future-dated to b, so only periodic syncs run while it is behind.
        let (a, b, c) = try threeNodes(offsetOfB: { behind.withLock { $0 } }) { $0.periodicSyncInterval = .seconds(1) }

        #expect(await eventually { (try? await a.write("x", payload: Array("1".utf8))) != nil })
        #expect(await eventually { await b.counterSnapshot().futureTimestampsRejected >= 1 })
        // Its clock problem says its reads are stale, and still does after a refused write.
        func clockMessage() async -> String { await b.status().problems.first { $0.kind == .clock }?.message ?? "" }
        #expect(await eventually { await clockMessage().contains("reads on this node are stale") })
        await #expect(throws: ReplicaError.self) { try await b.write("refused", payload: Array("1".utf8)) }
        let afterRefusal = await clockMessage()
        #expect(afterRefusal.contains("reads on this node are stale"), "\(afterRefusal)")
        // A sync with a completes after the refusal (a periodic one).
        let syncs = await b.status().peers.first { $0.id == "a" }?.syncsCompleted ?? 0
        #expect(await eventually { (await b.status().peers.first { $0.id == "a" }?.syncsCompleted ?? 0) > syncs })
        #expect(try await b.entry(for: "x") == nil)
        #expect(await !b.status().problems.contains { $0.kind == .peerClock }, "b's own clock is at fault, not a's entries")

        behind.withLock { $0 = 0 }  // the clock is fixed
        #expect(await eventually(timeout: .seconds(15)) { (try? await b.entry(for: "x")) != nil })
        for replica in [a, b, c] { await replica.shutdown() }
    }
}

/// A problem's JSON says whether it fails health, so tools need not know the kinds; read back,
/// the problem is the same.
@Suite struct ProblemCodingTests {
    @Test(arguments: [(Problem.Kind.commit, true), (.clock, true), (.sync, false), (.handshake, false)])
    func aProblemsJSONSaysWhetherItFailsHealth(kind: Problem.Kind, fails: Bool) throws {
        let problem = Problem(kind: kind, subject: "s", message: "m", since: Date(timeIntervalSince1970: 1_000), count: 2)
        let json = try JSONEncoder().encode(problem)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["failsHealth"] as? Bool == fails)
        #expect(try JSONDecoder().decode(Problem.self, from: json) == problem)
    }
}
