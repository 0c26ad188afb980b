import Foundation
import Testing
@testable import ReplicaCore

/// `MemberIdentityClash`: when another member's moves show two processes with its id, and when
/// that is over.
@Suite struct MemberIdentityClashTests {
    static let start = MonotonicInstant.now
    static func at(_ seconds: Double) -> MonotonicInstant { start + .milliseconds(Int(seconds * 1000)) }
    static func port(_ port: UInt16) -> Endpoint { Endpoint(host: "10.0.0.1", port: port) }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Moves of member "twin", each at a time in seconds, to a port.
        var moves: [(Double, UInt16)]
        /// Whether the last move lists it.
        var listed: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "back and forth twice within the window: two processes", moves: [(0, 1), (1, 2), (2, 1), (3, 2)], listed: true),
        Row(name: "a container restarted at new addresses each time is no clash", moves: [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], listed: false),
        Row(name: "one move back (a restart, then home again) is no clash", moves: [(0, 1), (1, 2), (2, 1)], listed: false),
        Row(name: "moves spread beyond the window are no clash", moves: [(0, 1), (20, 2), (40, 1), (60, 2)], listed: false),
        Row(name: "moves to the address it holds (re-dialled) and one return: listed on the fourth", moves: [(0, 1), (1, 1), (2, 2), (3, 1)], listed: true),
    ]

    @Test(arguments: rows) func movesBackAndForthAreListed(_ row: Row) {
        var clash = MemberIdentityClash(window: .seconds(30))
        var last: [Endpoint]?
        for (time, port) in row.moves { last = clash.moved("twin", to: Self.port(port), now: Self.at(time)) }
        #expect((last != nil) == row.listed)
        #expect(clash.listed.contains("twin") == row.listed)
    }

    /// Listed once (not again at each move while listed), with the addresses it moved between;
    /// cleared once it has not moved for the window; forgotten when it leaves.
    @Test func listedOnceClearedWhenStillAndForgottenWhenGone() {
        var clash = MemberIdentityClash(window: .seconds(30))
        var listings: [[Endpoint]] = []
        for (index, time) in [0.0, 1, 2, 3, 4, 5].enumerated() {
            if let addresses = clash.moved("twin", to: Self.port(UInt16(1 + index % 2)), now: Self.at(time)) { listings.append(addresses) }
        }
        #expect(listings == [[Self.port(1), Self.port(2)]])
        #expect(clash.tick(now: Self.at(34)).isEmpty, "moved 29 s ago: still listed")
        #expect(clash.tick(now: Self.at(35)) == ["twin"], "still for the window: over")
        #expect(clash.listed.isEmpty)
        for time in [40.0, 41, 42, 43] { _ = clash.moved("twin", to: Self.port(UInt16(time) % 2 + 1), now: Self.at(time)) }
        #expect(clash.listed == ["twin"], "listed again when it starts again")
        clash.forget("twin")
        #expect(clash.listed.isEmpty)
        #expect(clash.tick(now: Self.at(44)).isEmpty, "forgotten: nothing to clear")
    }

    /// Records held back against a member heard directly (`Membership`, contested) list it at
    /// the second within the window, keep it listed while they come, and clear a window after.
    @Test func contestedRecordsListTheMemberAtTheSecond() {
        var clash = MemberIdentityClash(window: .seconds(30))
        let listed = [0.0, 31, 40, 100].map { clash.contested("twin", now: Self.at($0)) }
        #expect(listed == [false, false, true, true], "the first fell out of the window; once listed, counted again")
        #expect(clash.tick(now: Self.at(129)).isEmpty)
        #expect(clash.tick(now: Self.at(130)) == ["twin"])
        for time in 0..<100 { _ = clash.contested("flood", now: Self.at(200 + Double(time) / 10)) }
        #expect(clash.listed.contains("flood"), "a flood is bounded in what it keeps, and listed")
    }
}
