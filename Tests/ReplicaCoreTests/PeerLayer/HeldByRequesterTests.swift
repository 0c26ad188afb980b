import Testing
@testable import ReplicaCore

/// What a sync reply leaves out (`HeldByRequester`, `PublishedStamps`) and how the index lists
/// keys without it (`HeldWrites`).
@Suite struct HeldByRequesterTests {
    static func stamp(_ wall: UInt64, _ logical: UInt16 = 0) -> HybridTimestamp { HybridTimestamp(wallMillis: wall, logical: logical) }

    /// Publications at sequences 3, 7 and 10, the clock at 100, 200 and 300 after each.
    static let published: PublishedStamps = {
        var stamps = PublishedStamps(epoch: 1)
        stamps.published(through: 3, clock: stamp(100))
        stamps.published(through: 7, clock: stamp(200))
        stamps.published(through: 10, clock: stamp(300))
        return stamps
    }()

    @Test(arguments: [
        // (a member holds our stream through, the stamps it holds)
        (UInt64(2), nil as ClosedRange<UInt64>?),  // before the first publication's end: nothing vouched for
        (3, 0...100), (6, 0...100), (7, 0...200), (9, 0...200), (10, 0...300), (99, 0...300),
    ])
    func aSequenceHeldVouchesForTheStampsPublishedByThen(through: UInt64, walls: ClosedRange<UInt64>?) {
        let range = Self.published.stamps(through: through)
        #expect(range?.upperBound == walls.map { Self.stamp($0.upperBound) })
        #expect(range?.lowerBound == walls.map { _ in HybridTimestamp(rawValue: 1) })
    }

    @Test func writesStoredUnpublishedAreNeverVouchedFor() {
        var stamps = Self.published
        stamps.unpublished(clock: Self.stamp(350))
        stamps.published(through: 12, clock: Self.stamp(400))
        #expect(stamps.stamps(through: 10) == nil, "what was stored unpublished lies at or below 350")
        #expect(stamps.stamps(through: 12) == HybridTimestamp(rawValue: Self.stamp(350).rawValue + 1)...Self.stamp(400))
    }

    @Test func theOldestRecordsGoPastCapacityAndASequenceOlderThanAllVouchesForNothing() {
        var stamps = PublishedStamps(epoch: 1, capacity: 4)
        for sequence in 1...6 { stamps.published(through: UInt64(sequence * 10), clock: Self.stamp(UInt64(sequence * 100))) }
        #expect(stamps.stamps(through: 10) == nil, "dropped")
        #expect(stamps.stamps(through: 35)?.upperBound == Self.stamp(300))
        stamps.published(through: 55, clock: Self.stamp(999))
        #expect(stamps.stamps(through: 60)?.upperBound == Self.stamp(600), "a sequence that goes back is not recorded")
    }

    // MARK: The judgement

    static let epoch: UInt64 = 1_000_000
    static let margin = Duration.seconds(2)  // 2,000 ms

    static func report(epoch: UInt64 = HeldByRequesterTests.epoch, through: UInt64) -> PeerReport {
        PeerReport(node: "us", epoch: epoch, through: through, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
    }

    /// A member's heartbeats at sequences 20 and 30, its clock at 1,500 and 4,000 ms into its life.
    static let theirs: PublishedStamps = {
        var stamps = PublishedStamps(epoch: 700_000, capacity: 8)
        stamps.heard(through: 20, timestamp: stamp(701_500, 1))
        stamps.heard(through: 30, timestamp: stamp(704_000, 1))
        return stamps
    }()

    static func judge(
        requesterEpoch: UInt64 = 500_000, report: PeerReport? = nil, others: [PeerReport] = [],
        published: PublishedStamps? = nil, doubted: Set<NodeID> = []
    ) -> HeldWrites {
        var stamps = PublishedStamps(epoch: epoch)
        stamps.published(through: 5, clock: stamp(epoch + 1_000))
        stamps.published(through: 9, clock: stamp(epoch + 5_000))
        var reports: [NodeID: PeerReport] = [:]
        for report in others + [report].compactMap({ $0 }) { reports[report.node] = report }
        return HeldByRequester.writes(
            requester: "them", requesterEpoch: requesterEpoch, reports: reports, responder: "us",
            publications: { writer in
                switch writer {
                case "us": published ?? stamps
                case "third": theirs
                default: nil
                }
            },
            margin: margin, doubted: doubted)
    }

    @Test func theRequestersOwnWritesFromMarginPastItsEpochAreHeld() {
        let held = Self.judge()
        #expect(held.ranges["them"]?.lowerBound == Self.stamp(502_000))
        #expect(!held.contains(Version(timestamp: Self.stamp(501_999, 65_535), node: "them")), "may be an earlier life's, lost by a power cut")
        #expect(held.contains(Version(timestamp: Self.stamp(502_000), node: "them")))
        #expect(held.contains(Version(timestamp: Self.stamp(9_000_000), node: "them")))
        #expect(!held.contains(Version(timestamp: Self.stamp(9_000_000), node: "other")), "a third writer's: not reported")
        #expect(Self.judge(requesterEpoch: 0).ranges["them"] == nil, "its life not known yet")
    }

    @Test func ourWritesAreHeldThroughWhatItReportsOfThisLifeOfOurs() {
        #expect(Self.judge().ranges["us"] == nil, "no report")
        #expect(Self.judge(report: Self.report(epoch: Self.epoch - 1, through: 9)).ranges["us"] == nil, "a report of our earlier life")
        #expect(Self.judge(report: Self.report(through: 4)).ranges["us"] == nil, "through less than the first publication")
        #expect(Self.judge(report: Self.report(through: 5)).ranges["us"] == nil, "published before the margin: maybe an earlier life's write fetched back")
        let held = Self.judge(report: Self.report(through: 9))
        #expect(held.ranges["us"] == Self.stamp(Self.epoch + 2_000)...Self.stamp(Self.epoch + 5_000))
        #expect(!held.contains(Version(timestamp: Self.stamp(Self.epoch + 5_000, 1), node: "us")), "published after sequence 9")
    }

    static func report(of writer: NodeID, epoch: UInt64, through: UInt64) -> PeerReport {
        PeerReport(node: writer, epoch: epoch, through: through, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
    }

    @Test func aThirdWritersWritesAreHeldThroughWhatItReportsOfItsStream() {
        let third: NodeID = "third"
        #expect(Self.judge(others: [Self.report(of: third, epoch: 700_000, through: 19)]).ranges[third] == nil, "before the first heartbeat heard")
        #expect(Self.judge(others: [Self.report(of: third, epoch: 700_000, through: 29)]).ranges[third] == nil,
                "the first heartbeat heard vouches for nothing: writes before it may be unpublished")
        #expect(Self.judge(others: [Self.report(of: third, epoch: 699_999, through: 30)]).ranges[third] == nil, "a report of another life of it")
        #expect(Self.judge(others: [Self.report(of: "unheard", epoch: 1, through: 30)]).ranges["unheard"] == nil, "a writer we know nothing of")
        let held = Self.judge(others: [Self.report(of: third, epoch: 700_000, through: 30)])
        #expect(held.ranges[third] == Self.stamp(702_000)...Self.stamp(704_000),
                "from the margin past its epoch (past the first heartbeat's reading) to just below the reading that followed sequence 30")
        #expect(!held.contains(Version(timestamp: Self.stamp(704_000, 1), node: third)), "its next write may carry the heartbeat's timestamp")
        #expect(Self.judge(others: [Self.report(of: third, epoch: 700_000, through: 30)], doubted: [third]).ranges[third] == nil, "its identity in doubt")
        #expect(Self.judge(others: [Self.report(of: "them", epoch: 700_000, through: 30)]).ranges["them"]?.upperBound == HybridTimestamp(rawValue: .max),
                "the requester's report of itself changes nothing")
    }

    @Test func aMembersHeartbeatsVouchBelowTheirReadingAndNotBelowTheFirstHeard() {
        var stamps = PublishedStamps(epoch: 1, capacity: 8)
        stamps.heard(through: 4, timestamp: Self.stamp(100, 1))
        #expect(stamps.stamps(through: 4) == nil, "writes before the first heartbeat heard may never have been published")
        stamps.heard(through: 4, timestamp: Self.stamp(150, 1))
        #expect(stamps.stamps(through: 4) == nil, "a sequence heard again adds nothing")
        stamps.heard(through: 9, timestamp: Self.stamp(200, 1))
        #expect(stamps.stamps(through: 9) == Self.stamp(100, 1)...Self.stamp(200))
        stamps.heard(through: 12, timestamp: Self.stamp(300))
        #expect(stamps.stamps(through: 12) == stamps.stamps(through: 9),
                "a reading with a logical part of 0 (an older node's wall clock) is not recorded: a clock stepped back may stamp below it")
    }

    @Test func nothingIsHeldWhileTheRequestersOrOurIdentityIsInDoubt() {
        let reports = [Self.report(of: "third", epoch: 700_000, through: 30)]
        #expect(Self.judge(report: Self.report(through: 9), others: reports, doubted: ["us"]).isEmpty)
        #expect(Self.judge(report: Self.report(through: 9), others: reports, doubted: ["them"]).isEmpty)
        #expect(!Self.judge(report: Self.report(through: 9), others: reports, doubted: ["someone-else"]).isEmpty)
    }

    @Test func theIndexListsKeysWithoutHeldWritesAndCountsThem() {
        var index = StoreIndex()
        let entries = [
            Entry(key: "a", version: Version(timestamp: Self.stamp(10), node: "them"), payload: [1]),
            Entry(key: "b", version: Version(timestamp: Self.stamp(20), node: "them"), payload: [1]),
            Entry(key: "c", version: Version(timestamp: Self.stamp(15), node: "other"), payload: [1]),
        ]
        _ = index.apply(entries) { _ in nil }
        var held = HeldWrites.nothing
        held.add("them", Self.stamp(12)...Self.stamp(99))
        held.add("nobody", Self.stamp(0)...Self.stamp(99))
        let all = Array(0..<StoreDigest.bucketCount)
        let listed = index.keys(inBuckets: all, storedAfter: nil, leavingOut: held)
        #expect(listed.keys == ["a", "c"] && listed.leftOut == 1)
        #expect(index.keys(inBuckets: all, storedAfter: 1, leavingOut: held) == ([], 0), "nothing stored after serial 1")
        #expect(index.keys(inBuckets: all, storedAfter: nil, leavingOut: .nothing) == (["a", "b", "c"], 0))
    }
}
