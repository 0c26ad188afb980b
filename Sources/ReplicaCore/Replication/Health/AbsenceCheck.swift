/// Whether this node comes back from longer out of contact than the tombstone retention.
///
/// A key (or log element) deleted while a node is away is a tombstone on the others, which they
/// collect once the retention has passed. A node that returns after that still holds the value,
/// nobody holds the tombstone that beat it, and anti-entropy brings the value back everywhere
/// (docs/sharing.md, "Tombstone retention"). Nothing on the wire can tell such a value from a
/// new one, so the return is what is told: an operator can then look at what came back.
///
/// "Contact" is a moment at which this node's clock agrees with its members' median: it hears
/// at least one member directly and measured it, so the time is checked, and that member's
/// stream (deletes included) reaches it. The last contact is kept in the store, saved at most
/// once per `saveInterval` (so a restart, or a crash, loses at most that much of it: the
/// judgement then errs towards telling).
///
/// A return is judged once per stretch of contact, at its first moment (after a start, or after
/// contact was lost): within a stretch, the time between two looks is not an absence (a stall of
/// this node, or a retention of milliseconds in a test, raised it at every turn).
///
/// If no key was deleted while this node was away and the others ran (every node stopped over
/// the same time, say), nothing came back; this node cannot know that, and says so. What it cannot see: a cluster split in two
/// groups for longer than the retention (each side is in contact within itself), and contact
/// through relays only (this node's clock is not compared then: that counts as out of contact,
/// though entries did arrive).
struct AbsenceCheck: Sendable, Equatable {
    /// `ReplicaConfiguration.tombstoneRetention`, in ms.
    let retentionMillis: UInt64
    /// The last contact (wall ms by the checked clock), nil if this store never had one.
    private(set) var lastContact: UInt64?
    /// The last contact saved in the store (or whose save was tried: a save that fails is not
    /// tried again at every turn).
    private var saved: UInt64?
    /// Whether the last look found contact: the stretch that a new contact continues.
    private var inContact = false
    /// The absence this run came back from, longer than the retention (wall ms): listed until
    /// the node restarts.
    private(set) var returned: Absence?

    struct Absence: Equatable, Sendable {
        var since: UInt64
        var until: UInt64
    }

    static let saveInterval: UInt64 = 60_000

    init(retentionMillis: UInt64, lastContact: UInt64?) {
        self.retentionMillis = retentionMillis
        self.lastContact = lastContact
        self.saved = lastContact
    }

    enum Action: Equatable, Sendable {
        case none
        /// Save this contact in the store.
        case save(wallMillis: UInt64)
        /// Back after longer than the retention without contact, from `since` to `until`: tell
        /// it, and save `until`.
        case returned(since: UInt64, until: UInt64)
    }

    /// The last contact, if it is later than the one saved: what a clean stop saves, so that
    /// the next start judges from it rather than from up to `saveInterval` earlier.
    var unsaved: UInt64? {
        guard let lastContact, lastContact != saved else { return nil }
        return lastContact
    }

    /// The contact `wallMillis` was saved.
    mutating func markSaved(_ wallMillis: UInt64) { saved = wallMillis }

    /// This node is out of contact (its clock does not agree with its members': none heard, or
    /// not measured, or skewed).
    mutating func contactLost() { inContact = false }

    /// This node is in contact at `wallMillis` (by its checked clock).
    mutating func contact(atWallMillis now: UInt64) -> Action {
        let resumed = !inContact
        inContact = true
        guard let last = lastContact else {
            lastContact = now
            saved = now
            return .save(wallMillis: now)
        }
        // A contact saved by a clock a little ahead (within the drift limit) is not moved back.
        guard now > last else { return .none }
        lastContact = now
        if resumed && now - last > retentionMillis {
            saved = now
            returned = Absence(since: last, until: now)
            return .returned(since: last, until: now)
        }
        guard now - (saved ?? 0) >= Self.saveInterval else { return .none }
        saved = now
        return .save(wallMillis: now)
    }
}
