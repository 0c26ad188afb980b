/// What is wrong with this node's trust that no member record states: trust sources the
/// program re-reads and cannot use (a `.pub` file that holds no key, a directory that cannot be
/// read), and records that announce a node with another node's key while members pass them on.
/// Members whose keys are not trusted here are `trust` problems too, derived from the member
/// table (`NodeCore.listProblems`).
struct TrustFaults: Sendable {
    private(set) var sources: [String: String] = [:]
    private struct Impersonation: Sendable {
        var last: MonotonicInstant
        var message: String
    }
    private var impersonations: [String: Impersonation] = [:]

    /// `source` has a problem (or none: nil). Returns whether that changed.
    mutating func source(_ source: String, problem: String?) -> Bool {
        guard sources[source] != problem else { return false }
        sources[source] = problem
        return true
    }

    /// A member passed on a record refused as an impersonation (`subject`: the node and address
    /// it announces).
    mutating func impersonated(_ subject: String, _ message: String, now: MonotonicInstant) {
        impersonations[subject] = Impersonation(last: now, message: message)
    }

    /// Forgets the impersonations no member has passed on for `window`; returns their subjects.
    mutating func expire(now: MonotonicInstant, window: Duration) -> [String] {
        let over = impersonations.filter { now - $0.value.last >= window }.keys.sorted()
        for subject in over { impersonations[subject] = nil }
        return over
    }

    /// The `trust` problems of sources and impersonations, by subject.
    var problems: [String: String] {
        var problems = sources
        for (subject, impersonation) in impersonations { problems[subject] = impersonation.message }
        return problems
    }
}
