/// What a change of the member table does to this node's state (sessions, syncs wanted, the
/// clash and clock checks, the unheard dials, a leave in progress), and what the actor is to
/// do about it: log it, carry out a session's actions, dial, or hang up.
extension NodeCore {
    enum MemberChangeAction: Equatable {
        case log(String)
        case perform([PeerSession.Action], for: NodeID)
        case dial(MemberRecord)
        case hangUp(NodeID)
    }

    mutating func memberChanged(
        _ change: Membership.Change, now: MonotonicInstant, trust: KeyTrust, storeSerial: UInt64, retention: Duration
    ) -> [MemberChangeAction] {
        // Each change below may drop or start over the member's session, and with it the
        // evidence that the member was heard: a real member stays one for `UnheardDials`, so
        // that its own record, when it brings it back, is dialled at once and does not wait
        // behind records of members that never existed.
        switch change {
        case .joined(let record), .restarted(let record), .moved(let record), .left(let record), .forgotten(let record), .expired(let record):
            if sessions[record.node]?.liveness.lastHeard != nil { unheardDials.heard(record.node) }
        }
        switch change {
        case .joined(let record):
            var actions: [MemberChangeAction] = []
            if sessions[record.node] == nil {
                sessions[record.node] = PeerSession(record: record, now: now)
            } else if let changed = sessions[record.node]?.recordChanged(record, now: now), !changed.isEmpty {
                actions.append(.perform(changed, for: record.node))
            }
            let admitted = trust.admits(record)
            actions.append(.log("member \(record.node) joined at \(record.address)\(admitted ? "" : " (its key is not trusted here: not dialled)")"))
            actions.append(.dial(record))
            // It may hold data we lack (a node that had been on its own): one sync, when it is up.
            if admitted { planner.want(.memberJoined, with: record.node) }
            return actions
        case .restarted(let record):
            _ = sessions[record.node]?.recordChanged(record, now: now)
            return []
        case .moved(let record):
            if healthState.memberClash.moved(record.node, to: record.address, now: now) != nil {
                doubts.doubt(record.node, serial: storeSerial)
            }
            // Its old connections close: a sync running over them will not be answered.
            _ = planner.connectionLost(to: record.node)
            if sessions[record.node] == nil {
                sessions[record.node] = PeerSession(record: record, now: now)
            } else {
                sessions[record.node]?.moved(to: record, now: now)
            }
            return [.log("member \(record.node) moved to \(record.address)"), .dial(record)]
        case .left(let record):
            var actions: [MemberChangeAction] = [.log("member \(record.node) left the cluster")]
            if let changed = sessions[record.node]?.recordChanged(record, now: now), !changed.isEmpty {
                actions.append(.perform(changed, for: record.node))
            }
            if sessions[record.node] == nil { sessions[record.node] = PeerSession(record: record, now: now) }
            memberDeparted(record.node)
            return actions + [.hangUp(record.node)]
        case .forgotten(let record):
            sessions[record.node] = nil
            memberDeparted(record.node)
            return [.log("member \(record.node) was forgotten"), .hangUp(record.node)]
        case .expired(let record):
            sessions[record.node] = nil
            memberDeparted(record.node)
            unheardDials.forget(record.node)
            return [.log("member \(record.node): its departure is older than the retention (\(retention)); removed from the member table"),
                    .hangUp(record.node)]
        }
    }

    /// A member that left or was forgotten: asked for nothing more, its clock no longer a
    /// problem of ours, and not waited for by our own leave (acted on at the next
    /// housekeeping, not amid a merge).
    mutating func memberDeparted(_ node: NodeID) {
        leaving?.memberDeparted(node)
        unheardDials.remove(node)
        planner.remove(node)
        healthState.memberClockFaults[node] = nil
        healthState.memberClash.forget(node)
    }
}
