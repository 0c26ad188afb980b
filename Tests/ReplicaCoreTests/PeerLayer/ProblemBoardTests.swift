import Foundation
import Testing
@testable import ReplicaCore

/// Problems are listed from the state that causes them (`ProblemBoard.list`), never raised or
/// cleared by hand: each owner of such state is tested here for the facts it states.
@Suite struct ProblemBoardTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let now = MonotonicInstant.now

    @Test func aKindListsExactlyWhatItsStateSays() {
        var board = ProblemBoard()
        board.list(.clock, messages: ["n0": "another kind stays"])
        let first = board.list(.sync, messages: ["n1": "slow", "n2": "silent"], at: Self.start)
        #expect(first.raised.map(\.subject) == ["n1", "n2"] && first.cleared.isEmpty)

        let second = board.list(.sync, messages: ["n2": "still silent", "n3": "slow"], at: Self.start + 5)
        #expect(second.raised.map(\.subject) == ["n3"], "only the new one is news")
        #expect(second.cleared.map(\.subject) == ["n1"])
        #expect(second.redescribed.map(\.subject) == ["n2"])
        let n2 = board.of(.sync).first { $0.subject == "n2" }
        #expect(n2?.message == "still silent", "a standing problem takes the message of now")
        #expect(n2?.since == Self.start, "and keeps its start")

        let last = board.list(.sync, messages: [:])
        #expect(last.raised.isEmpty && Set(last.cleared.map(\.subject)) == ["n2", "n3"])
        #expect(board.of(.sync).isEmpty && board.contains(.clock, "n0"))
    }

    @Test func factsCarryTheirOwnTimesAndCounts() {
        var board = ProblemBoard()
        let since = Self.start - 60
        board.list(.commit, ["store": ProblemFact("full", since: since, last: since, occurrences: 1)], at: Self.start)
        board.list(.commit, ["store": ProblemFact("full", since: since, last: Self.start + 3, occurrences: 4)], at: Self.start + 5)
        let commit = board.of(.commit).first
        #expect(commit?.since == since && commit?.count == 4 && commit?.last == Self.start + 3)
        // Without a count of its own, a fact counts once and its last time is the listing's.
        board.list(.isolated, messages: ["members": "alone"], at: Self.start)
        #expect(board.of(.isolated).first?.count == 1)
    }

    @Test func programReportsSettleInTheOrderDecided() {
        var reports = ProgramReports()
        let first = reports.load("k", "bad", ticket: 2)
        let older = reports.load("k", nil, ticket: 1)
        let again = reports.load("k", "bad", ticket: 3)
        #expect(first == .reported)
        #expect(older == .unchanged, "an older decision arriving last undoes nothing")
        #expect(again == .unchanged, "the same report again only counts")
        #expect(reports.loadErrors["k"]?.occurrences == 2)
        let cleared = reports.load("k", nil, ticket: 4)
        #expect(cleared == .cleared && reports.loadErrors.isEmpty)
        // An untracked report (a file moved aside at start) needs no ticket.
        let file = reports.load("/data/replica.sqlite", "moved aside")
        #expect(file == .reported)

        let saves = [reports.save("drinks", "too large"), reports.save("visits", "newer schema")]
        #expect(saves == [.reported, .reported])
        let clearedSaves = reports.clearSaves { $0 == "drinks" }
        #expect(clearedSaves == ["drinks"] && Array(reports.refusedSaves.keys) == ["visits"])
    }

    @Test func failedSavesAreListedInTheUsersTermsUntilACommitWrites() {
        var queue = CommitQueue()
        for key in 0..<(CommitQueue.listedSaveFailures + 5) { queue.saveFailed("k\(key)", reason: "disk full") }
        queue.saveFailed("k0", reason: "disk full")
        #expect(queue.failedSaves.count == CommitQueue.listedSaveFailures + 1)
        #expect(queue.failedSaves["k0"]?.occurrences == 2)
        #expect(queue.failedSaves[CommitQueue.moreSaveFailuresSubject]?.occurrences == 5)
        let listed = queue.savesWork()
        #expect(listed == CommitQueue.listedSaveFailures + 1 && queue.failedSaves.isEmpty)
    }

    @Test func theCommitProblemFollowsTheFailureThenTheDisk() {
        var queue = CommitQueue()
        #expect(queue.commitProblem { _ in "short" } == nil)
        _ = queue.failed("disk I/O error", now: Self.now)
        _ = queue.failed("disk I/O error", now: Self.now + .seconds(1))
        let failing = queue.commitProblem { _ in "short" }
        #expect(failing?.occurrences == 2 && failing?.message.contains("disk I/O error") == true)
        _ = queue.committed(now: Self.now + .seconds(2), disk: nil, frameBytes: 0)
        #expect(queue.commitProblem { _ in "short" } == nil, "a commit that writes ends it")
    }

    @Test func aMemberClashIsListedWithItsEvidenceUntilItsWindowPasses() {
        var clash = MemberIdentityClash(window: .seconds(30))
        let (a, b) = (Endpoint(host: "10.0.0.1", port: 7000), Endpoint(host: "10.0.0.2", port: 7000))
        let contests = (0..<3).map { clash.contested(NodeID("n2"), heardAt: a, placedAt: b, now: Self.now + .seconds($0)) }
        #expect(contests == [false, true, true], "listed from the second contest within the window")
        let listed = clash.problems["n2"]
        #expect(listed?.occurrences == 2 && listed?.message.contains("heard at 10.0.0.1:7000") == true)
        let over = clash.tick(now: Self.now + .seconds(40))
        #expect(over == [NodeID("n2")] && clash.problems.isEmpty)
    }

    @Test func trustFaultsKeepSourcesUntilFixedAndImpersonationsForTheirWindow() {
        var faults = TrustFaults()
        let changes = [faults.source("/trust/n9.pub", problem: "holds no key"), faults.source("/trust/n9.pub", problem: "holds no key")]
        #expect(changes == [true, false], "the same problem again changes nothing")
        faults.impersonated("n4 at 10.0.0.4:7000", "announces n4 with n1's key", now: Self.now)
        #expect(Set(faults.problems.keys) == ["/trust/n9.pub", "n4 at 10.0.0.4:7000"])
        let early = faults.expire(now: Self.now + .seconds(5), window: .seconds(10))
        let late = faults.expire(now: Self.now + .seconds(10), window: .seconds(10))
        #expect(early.isEmpty && late == ["n4 at 10.0.0.4:7000"])
        let fixed = faults.source("/trust/n9.pub", problem: nil)
        #expect(fixed && faults.problems.isEmpty)
    }

    @Test func isolationAndAbsenceStateWhatTheyFound() {
        var isolation = Isolation(limit: .seconds(10))
        let early = isolation.update(anyMemberAlive: false, hasMembersOrSeeds: true, now: Self.now)
        #expect(early == nil && isolation.condition == nil)
        _ = isolation.update(anyMemberAlive: false, hasMembersOrSeeds: true, now: Self.now + .seconds(12))
        #expect(isolation.condition == .alone(for: .seconds(12)))
        _ = isolation.update(anyMemberAlive: true, hasMembersOrSeeds: true, now: Self.now + .seconds(13))
        #expect(isolation.condition == nil)

        var absence = AbsenceCheck(retentionMillis: 1_000, lastContact: 10_000)
        let action = absence.contact(atWallMillis: 20_000)
        #expect(action == .returned(since: 10_000, until: 20_000))
        #expect(absence.returned == AbsenceCheck.Absence(since: 10_000, until: 20_000), "listed until the node restarts")
    }
}
