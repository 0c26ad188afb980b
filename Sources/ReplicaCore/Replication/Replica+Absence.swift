import Foundation

/// Whether this node comes back from longer out of contact than the tombstone retention: the
/// contacts `AbsenceCheck` judges, their saving in the store, and the `absence` problem.
extension Replica {
    /// Notes a contact with the members (this node's clock agrees with theirs: see
    /// `AbsenceCheck`), saves it now and then, and tells a return from longer away than the
    /// tombstone retention.
    func noteContact() {
        guard case .agrees = core.clockCheck.verdict, let now = expiryWallMillis(received: false) else {
            core.healthState.absence.contactLost()
            return
        }
        switch core.healthState.absence.contact(atWallMillis: now) {
        case .none: break
        case .save(let wall): saveLastContact(wall)
        case .returned(_, let until):
            // Listed from `absence.returned` until the node restarts.
            saveLastContact(until)
        }
    }

    /// Saves the last contact, if later than the one saved: at a clean stop, so that the next
    /// start judges from it.
    func saveUnsavedContact() {
        guard let contact = core.healthState.absence.unsaved else { return }
        core.healthState.absence.markSaved(contact)
        saveLastContact(contact)
    }

    private func saveLastContact(_ contact: UInt64) {
        do {
            try store.saveLastContact(contact)
        } catch {
            // A later judgement then starts from an earlier contact: it errs towards telling. A
            // store that does not commit is listed as such (`commit`).
            logger.debug("the last contact was not saved", metadata: ["error": "\(error)"])
        }
    }

    static func absenceMessage(since: UInt64, until: UInt64, retentionMillis: UInt64) -> String {
        let format = Date.ISO8601FormatStyle()
        let from = Date(timeIntervalSince1970: Double(since) / 1000).formatted(format)
        let to = Date(timeIntervalSince1970: Double(until) / 1000).formatted(format)
        return "this node was out of contact with its members for \(spokenSpan(until - since)) (\(from) to \(to)), longer than "
            + "the tombstone retention (\(spokenSpan(retentionMillis))): a key or log element deleted meanwhile, whose tombstone the "
            + "members have since collected, may have come back from this node's data to every node (nothing did if no key "
            + "was deleted while this node was away and the others ran). See docs/sharing.md, \"Tombstone retention\" "
            + "(listed until the node restarts)"
    }

    /// A span of milliseconds in its two largest units: "9 d 2 h", "3 h 5 min", "42 s".
    static func spokenSpan(_ millis: UInt64) -> String {
        let seconds = millis / 1000
        let units: [(UInt64, String)] = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")]
        guard let first = units.firstIndex(where: { seconds >= $0.0 }) else { return "\(millis) ms" }
        let (size, name) = units[first]
        var text = "\(seconds / size) \(name)"
        if first + 1 < units.count {
            let (next, nextName) = units[first + 1]
            let rest = (seconds % size) / next
            if rest > 0 { text += " \(rest) \(nextName)" }
        }
        return text
    }
}
