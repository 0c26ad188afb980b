import Foundation

/// The member table kept across restarts. A node restarted on its data directory dials the
/// members it knew, not only its seeds: without it, a node with no seeds (or whose seeds are
/// gone) came back alone, accepted writes that reached nobody and looked healthy, and one that
/// moved to another address was never found by the others.
extension Replica {
    /// Merges the table saved before this start, as gossip: active members are dialled (those
    /// gone for good show as `down` until forgotten, as they would from any member's gossip), and
    /// those that left or were forgotten stay so. Our own saved record is an earlier life. (It is
    /// saved as the wire's members messages: a later protocol version must still read those of
    /// this one, or a node upgraded without seeds comes back alone.)
    func restoreMemberTable() {
        let saved: [[UInt8]]
        do {
            saved = try store.savedMemberTable()
        } catch {
            logger.error("cannot read the member table saved before this start: \(error); members are found through the seeds only")
            return
        }
        var records: [MemberRecord] = []
        var unreadable = 0
        for bytes in saved {
            guard case .members(let message)? = try? codec.decode(bytes) else {
                unreadable += 1
                continue
            }
            records += message.records.filter { $0.node != identity.node }
        }
        if unreadable > 0 {
            logger.warning("\(unreadable) part(s) of the saved member table could not be read and were skipped (it is saved anew)")
        }
        guard !records.isEmpty else { return }
        let active = records.filter { $0.status == .active }.count
        logger.info("restored \(records.count) member record(s) saved before this start (\(active) active: dialling them)")
        mergeMembers(records, from: identity.node, sender: nil)
    }

    /// Saves the table when it changed (at most once a second; at once with `force`, at shutdown).
    /// A failure (a full disk) is logged and retried later: the table only spares the seeds.
    func saveMemberTable(now: MonotonicInstant, force: Bool = false) {
        guard core.membership.digest != core.savedMemberTableDigest, core.duties.savesMemberTable(now: now, force: force) else { return }
        do {
            try store.saveMemberTable(memberTableMessages())
            core.savedMemberTableDigest = core.membership.digest
            core.duties.memberTableSaved(now: now, failed: false)
        } catch {
            logger.warning("cannot save the member table\(force ? "" : " (retrying in \(core.duties.intervals.memberTableRetry))"): \(error)")
            core.duties.memberTableSaved(now: now, failed: true)
        }
    }

    /// The table as saved: its members messages, encoded.
    func memberTableMessages() -> [[UInt8]] {
        MembersMessage.split(origin: identity.node, wantsReply: false, records: core.membership.allRecords, limits: codec.limits)
            .map { codec.encode(.members($0)) }
    }

}
