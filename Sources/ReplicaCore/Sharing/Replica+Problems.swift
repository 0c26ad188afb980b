import Foundation

/// How shared keys report problems in `replica-node status` (`loadErrors`, `saveErrors`), in
/// the user's terms: a key name, `counter visits`, `element <id> of log drinks`.
extension Replica {
    /// An entry of a shared key that could not be read: shown as a load error of `subject`, and
    /// kept aside unless it is newer-schema data, which stays in place untouched for the nodes
    /// that understand it.
    nonisolated func reportUnreadable(_ entry: Entry, of subject: String, error: SharingError) {
        let isNewer = if case .newerSchema = error { true } else { false }
        let ticket = problemTicket()
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
        let ticket = problemTicket()
        Task { await settleLoadError(subject, message: nil, ticket: ticket) }
    }

    /// A shared key decided that its save of `subject` was refused (`message`) or was made (nil):
    /// listed in, or cleared from, `saveErrors` in the order decided, whatever order the tasks
    /// arrive in (a clearing that overtook an earlier report left the report listed for good).
    nonisolated func decideRefusedSave(_ subject: String, message: String?) {
        let ticket = problemTicket()
        Task { await settleRefusedSave(subject, message: message, ticket: ticket) }
    }

    func settleRefusedSave(_ subject: String, message: String?, ticket: UInt64) {
        logSaveReport(subject, message, core.healthState.reports.save(subject, message, ticket: ticket))
    }

    /// A save of a shared key that this program refused to make (it would overwrite newer-schema
    /// data, or a log element is too large or repeated): listed in `saveErrors` until the key
    /// saves `subject` again.
    func reportRefusedSave(_ subject: String, message: String) {
        logSaveReport(subject, message, core.healthState.reports.save(subject, message))
    }

    func clearRefusedSave(_ subject: String) {
        logSaveReport(subject, nil, core.healthState.reports.save(subject, nil))
    }

    func clearRefusedSaves(where belongs: (String) -> Bool) {
        for subject in core.healthState.reports.clearSaves(where: belongs) { logSaveReport(subject, nil, .cleared) }
    }

    private func logSaveReport(_ subject: String, _ message: String?, _ outcome: ProgramReports.Outcome) {
        switch outcome {
        case .unchanged: break
        case .reported: logger.error("save refused", metadata: ["subject": "\(subject)", "error": "\(message ?? "")"])
        case .cleared: logger.info("refused save cleared", metadata: ["subject": "\(subject)"])
        }
    }
}
