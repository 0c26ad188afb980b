import Foundation

/// How shared keys report problems in `replica-node status` (`loadErrors`, `saveErrors`), in
/// the user's terms: a key name, `counter visits`, `element <id> of log drinks`.
extension Replica {
    /// An entry of a shared key that could not be read: shown as a load error of `subject`, and
    /// kept aside unless it is newer-schema data, which stays in place untouched for the nodes
    /// that understand it.
    nonisolated func reportUnreadable(_ entry: Entry, of subject: String, error: SharingError) {
        let isNewer = if case .newerSchema = error { true } else { false }
        let ticket = loadErrorTicket()
        Task {
            var message = error.description
            if !isNewer {
                do {
                    try await quarantine(entry, reason: error.description)
                } catch let failure {
                    message += " (and copying it aside failed: \(failure))"
                }
            }
            await settleLoadError(subject, message: message, ticket: ticket)
        }
    }

    /// The entry of `subject` now reads well: its load error, if any, is cleared (in order with
    /// the reports: see `settleLoadError`).
    nonisolated func reportReadable(_ subject: String) {
        let ticket = loadErrorTicket()
        Task { await settleLoadError(subject, message: nil, ticket: ticket) }
    }

    /// A save of a shared key that this program refused to make (it would overwrite newer-schema
    /// data, or a log element is too large or repeated): listed in `saveErrors` until the key
    /// saves `subject` again.
    func reportRefusedSave(_ subject: String, message: String) {
        if refusedSaves[subject]?.message != message {
            logger.error("save refused", metadata: ["subject": "\(subject)", "error": "\(message)"])
            refusedSaves[subject] = Problem(kind: .save, subject: subject, message: message)
        }
    }

    func clearRefusedSave(_ subject: String) {
        if refusedSaves.removeValue(forKey: subject) != nil {
            logger.info("refused save cleared", metadata: ["subject": "\(subject)"])
        }
    }

    func clearRefusedSaves(where belongs: (String) -> Bool) {
        for subject in refusedSaves.keys where belongs(subject) { clearRefusedSave(subject) }
    }
}
