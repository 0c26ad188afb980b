/// A departure in progress: the members asked to acknowledge it and those that have not yet.
///
/// The members asked are fixed when the leave starts, so the count reported is of those that
/// answered: a member that comes alive or goes silent meanwhile changes nothing.
struct LeaveProgress: Equatable, Sendable {
    let asked: Set<NodeID>
    private(set) var waitingFor: Set<NodeID>
    let deadline: ContinuousClock.Instant

    init(asking members: Set<NodeID>, deadline: ContinuousClock.Instant) {
        asked = members
        waitingFor = members
        self.deadline = deadline
    }

    /// `node` acknowledged (a members reply came back from it). True when none is left to wait for.
    mutating func acknowledged(by node: NodeID) -> Bool {
        waitingFor.remove(node)
        return waitingFor.isEmpty
    }

    /// How many of the members asked have acknowledged.
    var acknowledgements: Int { asked.count - waitingFor.count }

    func isOverdue(now: ContinuousClock.Instant) -> Bool { now >= deadline }
}
