import Testing
@testable import ReplicaCore

struct MonotonicInstantTests {
    @Test func arithmeticAgreesWithDurations() {
        let start = MonotonicInstant(sinceOrigin: .seconds(100))
        let later = start + .milliseconds(1500)
        #expect(later - start == .milliseconds(1500))
        #expect(later - .milliseconds(1500) == start)
        #expect(start.duration(to: later) == .milliseconds(1500))
        #expect(start.advanced(by: .milliseconds(1500)) == later)
        #expect(start < later && !(later < start))
        var moved = start
        moved += .seconds(2)
        moved -= .milliseconds(500)
        #expect(moved == later)
    }

    @Test func readingsNeverGoBackAndKeepPaceWithContinuousClock() {
        let (ours, theirs) = (MonotonicInstant.now, ContinuousClock.now)
        var last = ours
        for _ in 0..<10_000 {
            let next = MonotonicInstant.now
            #expect(next >= last)
            last = next
        }
        let drift = (MonotonicInstant.now - ours) - (ContinuousClock.now - theirs)
        #expect(abs(drift.components.seconds) < 1, "both read one clock: \(drift)")
    }
}
