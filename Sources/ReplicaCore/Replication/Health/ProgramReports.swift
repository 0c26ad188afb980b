import Foundation

/// What the program embedding the node says of its own data: values it could not read (load
/// errors, and files moved aside at start) and saves it refused to make, by subject. Shared keys
/// decide on their own threads and report in tasks that may arrive in any order: each decision
/// carries a ticket, and an older one never undoes a newer one.
struct ProgramReports: Sendable {
    private(set) var loadErrors: [String: ProblemFact] = [:]
    private(set) var refusedSaves: [String: ProblemFact] = [:]
    private var loadTickets: [String: UInt64] = [:]
    private var saveTickets: [String: UInt64] = [:]

    enum Outcome: Equatable, Sendable {
        case unchanged
        /// Newly listed, or listed with another message.
        case reported
        case cleared
    }

    /// `subject` cannot be read (`message`) or reads well (nil). A report of what is listed
    /// already counts one more occurrence.
    @discardableResult
    mutating func load(_ subject: String, _ message: String?, ticket: UInt64? = nil, at date: Date = Date()) -> Outcome {
        Self.settle(&loadErrors, &loadTickets, subject, message, ticket: ticket, at: date)
    }

    /// The program refused to save `subject` (`message`), or saved it (nil).
    @discardableResult
    mutating func save(_ subject: String, _ message: String?, ticket: UInt64? = nil, at date: Date = Date()) -> Outcome {
        Self.settle(&refusedSaves, &saveTickets, subject, message, ticket: ticket, at: date)
    }

    /// Saves of these subjects are no longer refused (a family's keys, after it saved again).
    mutating func clearSaves(where belongs: (String) -> Bool) -> [String] {
        let cleared = refusedSaves.keys.filter(belongs)
        for subject in cleared { refusedSaves[subject] = nil }
        return cleared.sorted()
    }

    private static func settle(
        _ facts: inout [String: ProblemFact], _ tickets: inout [String: UInt64], _ subject: String, _ message: String?,
        ticket: UInt64?, at date: Date
    ) -> Outcome {
        if let ticket {
            guard ticket > (tickets[subject] ?? 0) else { return .unchanged }
            tickets[subject] = ticket
        }
        guard let message else { return facts.removeValue(forKey: subject) == nil ? .unchanged : .cleared }
        guard var fact = facts[subject] else {
            facts[subject] = ProblemFact(message, since: date, last: date, occurrences: 1)
            return .reported
        }
        let outcome: Outcome = fact.message == message ? .unchanged : .reported
        fact.message = message
        fact.last = date
        fact.occurrences = (fact.occurrences ?? 1) + 1
        facts[subject] = fact
        return outcome
    }
}
