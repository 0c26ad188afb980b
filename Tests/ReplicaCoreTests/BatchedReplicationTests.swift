import Foundation
import Synchronization
import Testing
@testable import ReplicaCore

/// The fast path end to end over real sockets: one commit's writes travel as batches (wire
/// kind 8) and arrive whole; writes submitted without awaiting complete exactly once; change
/// handlers run after each commit until stopped.
@Suite struct BatchedReplicationTests {
    static func requests(_ count: Int, prefix: String) -> [Replica.WriteRequest] {
        (0..<count).map { Replica.WriteRequest(key: "\(prefix)\($0)", payload: Array("\($0)".utf8)) }
    }

    /// A value that handlers on the replica's thread update and the test reads.
    final class Tally<Value: Sendable>: Sendable {
        private let state: Mutex<Value>
        init(_ value: Value) { state = Mutex(value) }
        var value: Value { state.withLock { $0 } }
        func update(_ body: (inout Value) -> Void) { state.withLock { body(&$0) } }
    }

    /// Counts the changes under `prefix` that reach `replica`.
    static func countChanges(on replica: Replica, prefix: String) async -> Tally<Int> {
        let seen = Tally(0)
        _ = await replica.observeChanges(prefix: prefix) { _ in seen.update { $0 += 1 } }
        return seen
    }

    @Test func oneCommitTravelsAsFewBatchesAndArrivesWhole() async throws {
        let replicas = try makeReplicas(2)
        #expect(await connected(replicas))
        let (a, b) = (replicas[0], replicas[1])
        let seen = await Self.countChanges(on: b, prefix: "burst/")
        let before = await a.status().counters
        try await a.write(Self.requests(3000, prefix: "burst/"))
        let after = await a.status().counters
        #expect(after.updatesPublished - before.updatesPublished == 3000)
        #expect(after.updateMessagesPublished - before.updateMessagesPublished == 3, "1,024 + 1,024 + 952 updates")
        #expect(await eventually { seen.value == 3000 })
        #expect(try await b.entries(prefix: "burst/").count == 3000)
        #expect(try await b.entry(for: "burst/2999")?.payload == Array("2999".utf8))
        let view = await b.status().peers.first { $0.id == "r1" }
        #expect(view?.sequenceGaps == 0 && view?.missingUpdates == 0, "every sequence of the batches was seen")
    }

    /// What a node that does not know kind 8 needs from its members during a rolling upgrade.
    @Test func withBatchingOffEveryUpdateIsAMessageOfItsOwn() async throws {
        let replicas = try makeReplicas(2, configure: { index, configuration in
            if index == 0 { configuration.batchesUpdates = false }
        })
        #expect(await connected(replicas))
        let seen = await Self.countChanges(on: replicas[1], prefix: "single/")
        let before = await replicas[0].status().counters
        try await replicas[0].write(Self.requests(50, prefix: "single/"))
        let after = await replicas[0].status().counters
        #expect(after.updateMessagesPublished - before.updateMessagesPublished == 50)
        #expect(await eventually { seen.value == 50 })
    }

    @Test func submittedWritesCompleteExactlyOnce() async throws {
        let replica = try makeReplicas(1)[0]
        let outcomes = Tally<[Int: [Bool]]>([:])
        // From a thread of its own, not a task: the caller `submit` is for.
        let submitter = Thread {
            for index in 0..<1000 {
                replica.submit([Replica.WriteRequest(key: "sub/\(index)", payload: [1])]) { result in
                    outcomes.update { $0[index, default: []].append((try? result.get()) != nil) }
                }
            }
            replica.submit([Replica.WriteRequest(key: "", payload: [1])]) { result in
                outcomes.update { $0[-1, default: []].append((try? result.get()) != nil) }
            }
        }
        submitter.start()
        #expect(await eventually { outcomes.value.count == 1001 })
        let results = outcomes.value
        #expect(results.values.allSatisfy { $0.count == 1 }, "each completion runs once")
        #expect(results[-1] == [false], "an invalid key is refused through its completion")
        #expect(results.filter { $0.key >= 0 }.allSatisfy { $0.value == [true] })
        #expect(try await replica.entries(prefix: "sub/").count == 1000)

        await replica.shutdown()
        let refused = Tally<[Result<[Entry], any Error>]>([])
        replica.submit([Replica.WriteRequest(key: "late", payload: [1])]) { result in refused.update { $0.append(result) } }
        #expect(await eventually { refused.value.count == 1 })
        guard case .failure(let error) = refused.value.first else {
            Issue.record("a write after shutdown succeeded")
            return
        }
        #expect(error as? ReplicaError == .shutDown)
    }

    /// A submitted write held for the clock check (its seed never answers), whose caller keeps
    /// no reference to the replica: it is committed when the grace ends, and answered once.
    @Test func aHeldSubmissionIsAnsweredWithoutTheCallersReference() async throws {
        let outcomes = Tally<[Bool]>([])
        do {
            var configuration = ReplicaConfiguration(
                node: "lonely", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()),
                peers: [Endpoint(host: "127.0.0.1", port: testPorts.pair())], storage: .memory)
            configuration.clockCheckGrace = .milliseconds(500)
            let replica = try Replica(configuration)
            replica.submit([Replica.WriteRequest(key: "held", payload: [1])]) { result in
                outcomes.update { $0.append((try? result.get()) != nil) }
            }
            _ = await replica.status()  // its loop runs (a replica released before that is freed at once)
        }
        #expect(await eventually { outcomes.value == [true] })
        #expect(outcomes.value == [true], "answered once")
    }

    @Test func aChangeHandlerRunsAfterEachCommitUntilStopped() async throws {
        let replica = try makeReplicas(1)[0]
        let keys = Tally<[String]>([])
        let id = await replica.observeChanges(prefix: "watched/") { change in keys.update { $0.append(change.entry.key) } }
        try await replica.write("watched/a", payload: [1])
        try await replica.write("other/b", payload: [1])
        #expect(keys.value == ["watched/a"], "it ran before the write returned, for its prefix only")
        await replica.stopObserving(id)
        try await replica.write("watched/c", payload: [1])
        #expect(keys.value == ["watched/a"])
    }

    /// One commit with local writes and an entry of this node's own id received back (its own
    /// earlier write, as after a wipe): a winner is known as local by its stamp, above every
    /// entry received before the commit, so the received one is applied, counted and observed as
    /// remote, and not published again as if it were new.
    @Test func anOwnEarlierWriteReceivedInTheCommitOfNewOnesIsNotPublished() async throws {
        let replica = try makeReplicas(1)[0]
        let origins = Tally<[String: Change.Origin]>([:])
        _ = await replica.observeChanges(prefix: "own/") { change in origins.update { $0[change.entry.key] = change.origin } }
        let before = await replica.status().counters
        let aSecondAgo = UInt64(Date().timeIntervalSince1970 * 1000) - 1000
        let earlier = Entry(key: "own/earlier", version: Version(timestamp: HybridTimestamp(wallMillis: aSecondAgo, logical: 0), node: "r1"), payload: [1])
        await replica.commitInOneTurn(received: [earlier], from: "r2", writing: [Replica.WriteRequest(key: "own/new", payload: [2])])
        let after = await replica.status().counters
        #expect(after.updatesPublished - before.updatesPublished == 1, "the new write only")
        #expect(after.updatesApplied - before.updatesApplied == 1)
        #expect(origins.value == ["own/earlier": .remote("r2"), "own/new": .local])
        #expect(try await replica.entry(for: "own/earlier")?.payload == [1])

        // The same with a received entry that loses (a stale copy of a stored key): the winners
        // are then picked out one by one, by the rule alone.
        var stale = try await replica.write("own/stale", payload: [3])
        stale.version.timestamp = HybridTimestamp(wallMillis: aSecondAgo, logical: 0)
        stale.payload = [4]
        let again = Entry(key: "own/again", version: Version(timestamp: HybridTimestamp(wallMillis: aSecondAgo, logical: 1), node: "r1"), payload: [5])
        let beforeSlow = await replica.status().counters
        await replica.commitInOneTurn(received: [stale, again], from: "r2", writing: [Replica.WriteRequest(key: "own/newer", payload: [6])])
        let afterSlow = await replica.status().counters
        #expect(afterSlow.updatesPublished - beforeSlow.updatesPublished == 1, "the new write only")
        #expect(afterSlow.updatesApplied - beforeSlow.updatesApplied == 1, "own/again; the stale copy lost")
        #expect(origins.value["own/again"] == .remote("r2") && origins.value["own/newer"] == .local)
        #expect(try await replica.entry(for: "own/stale")?.payload == [3])
    }
}

/// The loop's housekeeping (`HousekeepingSchedule`) as the replica wires it: a turn that skipped
/// it has the loop wake for it within the interval, and an event it judges within no time.
@Suite struct HousekeepingWiringTests {
    @Test func aSkippedTurnHasTheLoopWakeForItWithinTheInterval() async throws {
        var configuration = ReplicaConfiguration(node: "r1", listen: Endpoint(host: "127.0.0.1", port: testPorts.pair()), storage: .memory)
        configuration.heartbeatInterval = .seconds(10)  // no heartbeat to wake it sooner
        let replica = try Replica(configuration)
        let (afterSkip, afterEvent) = await replica.timeoutsAroundHousekeeping()
        #expect(afterSkip <= HousekeepingSchedule.interval, "without it, the loop slept up to 100 ms")
        #expect(afterEvent == .zero)
        await replica.shutdown()
    }
}

extension Replica {
    /// Two turns' timers back to back (the second skips the housekeeping the first ran or that
    /// ran just before), then the poll's timeout; then an event, and the timeout again.
    fileprivate func timeoutsAroundHousekeeping() -> (afterSkip: Duration, afterEvent: Duration) {
        runTimers(now: .now)
        runTimers(now: .now)
        let afterSkip = pollTimeout ?? .seconds(3600)
        core.housekeeping.runSoon()
        return (afterSkip, pollTimeout ?? .seconds(3600))
    }

    /// Queues `received` and `requests` and commits them in one flush, as one loop turn that
    /// read a member's message and took a write would.
    fileprivate func commitInOneTurn(received: [Entry], from node: NodeID, writing requests: [WriteRequest]) {
        accept(received, from: node)
        core.commits.enqueue(CommitQueue.PendingWrite(requests: requests, completion: .handler { _ in }))
        flush()
    }
}
