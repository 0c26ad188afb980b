import Foundation
import Testing
@testable import ReplicaCore

/// `ProblemBoard.list`: a kind's problems follow a machine's state, with no shadow set of what
/// was listed; what changed comes back for the log.
@Suite struct ProblemBoardTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aKindListsExactlyWhatItsStateSays() {
        var board = ProblemBoard()
        board.raise(.clock, "n0", "another kind stays")
        let first = board.list(.sync, ["n1": "slow", "n2": "silent"], at: Self.start)
        #expect(first.raised.map(\.subject) == ["n1", "n2"] && first.cleared.isEmpty)

        let second = board.list(.sync, ["n2": "still silent", "n3": "slow"], at: Self.start + 5)
        #expect(second.raised.map(\.subject) == ["n3"], "only the new one is news")
        #expect(second.cleared.map(\.subject) == ["n1"])
        #expect(board.contains(.sync, "n2", saying: "still silent"), "a standing problem takes the message of now")
        #expect(board.of(.sync).first { $0.subject == "n2" }?.since == Self.start, "and keeps its start")

        let last = board.list(.sync, [:])
        #expect(last.raised.isEmpty && Set(last.cleared.map(\.subject)) == ["n2", "n3"])
        #expect(board.of(.sync).isEmpty && board.contains(.clock, "n0"))
    }
}
