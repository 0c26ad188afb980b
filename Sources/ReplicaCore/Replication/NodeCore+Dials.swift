/// Whether to open a member's links, decided in the core: a member never heard here waits for
/// one of the places `UnheardDials` gives such members; one heard, departed or not admitted goes
/// through (opening refuses the last two). The actor opens and closes links as told.
extension NodeCore {
    enum DialAction: Equatable, Sendable {
        case open(MemberRecord)
        /// Close its links: no place now, or it was not heard in `attempt` since it was dialled.
        case hangUp(NodeID, unheardFor: Duration?)
    }

    /// `record` is to be dialled now (its record came or changed).
    mutating func dial(_ record: MemberRecord, admitted: Bool, now: MonotonicInstant) -> DialAction {
        let heard = sessions[record.node]?.liveness.lastHeard != nil
        guard heard || record.status != .active || !admitted || unheardDials.admit(record.node, now: now) else {
            return .hangUp(record.node, unheardFor: nil)
        }
        return .open(record)
    }

    /// Members heard since they were dialled leave the count of unheard ones; links unheard for
    /// too long give their places to members waiting, if still active and admitted.
    mutating func maintainUnheardDials(now: MonotonicInstant, admits: (MemberRecord) -> Bool) -> [DialAction] {
        for node in unheardDials.dialling.keys where sessions[node]?.liveness.lastHeard != nil { unheardDials.heard(node) }
        var actions: [DialAction] = []
        for action in unheardDials.tick(now: now) {
            switch action {
            case .close(let node):
                actions.append(.hangUp(node, unheardFor: unheardDials.attempt))
            case .open(let node):
                guard let record = membership[node], record.status == .active, admits(record) else {
                    unheardDials.remove(node)
                    continue
                }
                actions.append(.open(record))
            }
        }
        return actions
    }
}
