import Foundation

/// A fault a user or operator must be able to see, listed in `status` until it clears.
public struct Problem: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// A value, counter, log or file could not be read (undecodable, corrupt, newer schema).
        case load
        /// A local write could not be committed (full or read-only disk, a newer schema's data).
        case save
        /// The store's file could not be read while the node ran (damaged under it, or a disk
        /// I/O error): what it holds cannot be served or synced until a restart checks it.
        case store
        /// The last commit failed (a full or read-only disk): received entries are fetched again,
        /// with back-off, once commits work; local writes fail until then. Or commits work but
        /// the disk lacks the room a large one may need (`DiskSpace.roomForCommits`; once short,
        /// until it has `DiskSpace.roomToRecover`).
        case commit
        /// This node's clock is too far from its members' (median): local writes are refused.
        case clock
        /// A member's clock is too far off: ahead of ours (its entries are refused while so),
        /// or behind ours and the members' median (see `ClockCheck.MemberClock`).
        case peerClock
        /// Another process claims this node's id.
        case identity
        /// Another member's id seems to be used by two processes: its record keeps moving back
        /// and forth between addresses (`MemberIdentityClash`). Listed by every member; the two
        /// processes list `identity` themselves. (Since 0.28.0: a client before it cannot read
        /// a `status` that lists it, and says so.)
        case memberIdentity
        /// A member was announced whose key is not trusted here: it is not dialled, and its
        /// connections are refused.
        case trust
        /// A member or seed this node dials refuses the connection's handshake: it runs the other
        /// security mode (CURVE against none), or it does not trust this node's key.
        case handshake
        /// This node has heard no member for a while although it has members or seeds: its
        /// writes stay here until one is reached (seeds that never answer, members all down,
        /// or a partition).
        case isolated
        /// Syncs with a member keep timing out while waiting for a chunk (`SyncPlanner.stalls`):
        /// a link too slow to carry a chunk in the longest patience, or a member that drops its
        /// requests. What this node misses arrives slowly or not at all.
        case sync
        /// This node's data and a member's differ, and syncing does not settle it: both digest
        /// roots stayed as they are through several completed syncs (one of them in full) for
        /// longer than a tombstone sweep and the clock drift explain (`PeerSession`). Since
        /// 0.31.0.
        case divergence
        /// This node came back from longer out of contact with its members than the tombstone
        /// retention: what was deleted meanwhile may have come back from its data
        /// (`AbsenceCheck`). Listed until the node restarts. Since 0.33.0.
        case absence
        /// A member's heartbeats claim updates it does not serve: it answered repairs of them
        /// "no longer held" several times in a row (a bug, or a hostile member). Its claims are
        /// chased once per back-off, up to a minute apart, not once per claim. Since 0.35.0.
        case claims
    }

    public var kind: Kind
    /// The key, file or member concerned.
    public var subject: String
    public var message: String
    /// When it first occurred, when last, and how many times (since it was last clear).
    public var since: Date
    public var last: Date
    public var count: Int

    public init(kind: Kind, subject: String, message: String, since: Date = Date(), last: Date? = nil, count: Int = 1) {
        self.kind = kind
        self.subject = subject
        self.message = message
        self.since = since
        self.last = last ?? since
        self.count = count
    }

    /// Whether `health` fails on it: this node cannot commit or read its store, or its clock
    /// would reorder history, or another process uses its id. The rest is listed for the operator but does
    /// not make the node unhealthy: a refused write was told to its caller and clears when its
    /// key saves again, a load error names data to look at, another member's clock or key
    /// is that member's problem, and an isolated node still serves (during a partition, both
    /// sides are isolated and both are fine), as does one whose syncs with a member stall.
    public var failsHealth: Bool {
        switch kind {
        case .commit, .store, .clock, .identity: true
        case .load, .save, .peerClock, .memberIdentity, .trust, .handshake, .isolated, .sync, .divergence, .absence, .claims: false
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, subject, message, since, last, count, failsHealth
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            kind: try container.decode(Kind.self, forKey: .kind), subject: try container.decode(String.self, forKey: .subject),
            message: try container.decode(String.self, forKey: .message), since: try container.decode(Date.self, forKey: .since),
            last: try container.decode(Date.self, forKey: .last), count: try container.decode(Int.self, forKey: .count))
    }

    /// Encoded with `failsHealth`, so tools reading `status --json` or `health --json` need not
    /// know which kinds fail health (read back, it is derived from the kind again).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(subject, forKey: .subject)
        try container.encode(message, forKey: .message)
        try container.encode(since, forKey: .since)
        try container.encode(last, forKey: .last)
        try container.encode(count, forKey: .count)
        try container.encode(failsHealth, forKey: .failsHealth)
    }

    /// The same problem again: a new message and time, one more occurrence.
    mutating func recur(_ message: String, at date: Date = Date()) {
        self.message = message
        last = date
        count += 1
    }
}

/// A problem as the state that causes it states it now: the message, and where that state
/// keeps them, the times and occurrences of this stretch of it.
struct ProblemFact: Equatable, Sendable {
    var message: String
    var since: Date?
    var last: Date?
    var occurrences: Int?

    init(_ message: String, since: Date? = nil, last: Date? = nil, occurrences: Int? = nil) {
        self.message = message
        self.since = since
        self.last = last
        self.occurrences = occurrences
    }
}

/// The problems `status` and `health` list, by kind and subject. Nothing raises or clears one
/// by hand: each kind is listed, all at once, from the state that causes it
/// (`NodeCore.listProblems`); the board keeps what that state does not (since when a problem
/// has been listed) and says what changed, for the log.
struct ProblemBoard: Sendable {
    private(set) var problems: [String: Problem] = [:]

    private static func id(_ kind: Problem.Kind, _ subject: String) -> String { "\(kind.rawValue)\u{1F}\(subject)" }

    /// What one listing changed: problems new, problems whose message changed, problems gone.
    struct Change: Sendable {
        var raised: [Problem] = []
        var redescribed: [Problem] = []
        var cleared: [Problem] = []
    }

    /// The problems of `kind` are now exactly `current`, by subject: new ones are listed, listed
    /// ones take the message (and the times and count, where the fact has them), the rest clear.
    @discardableResult
    mutating func list(_ kind: Problem.Kind, _ current: [String: ProblemFact], at date: Date = Date()) -> Change {
        var change = Change()
        for problem in of(kind) where current[problem.subject] == nil {
            if let gone = problems.removeValue(forKey: Self.id(kind, problem.subject)) { change.cleared.append(gone) }
        }
        for (subject, fact) in current.sorted(by: { $0.key < $1.key }) {
            let id = Self.id(kind, subject)
            guard var problem = problems[id] else {
                let problem = Problem(
                    kind: kind, subject: subject, message: fact.message, since: fact.since ?? date, last: fact.last,
                    count: fact.occurrences ?? 1)
                problems[id] = problem
                change.raised.append(problem)
                continue
            }
            if problem.message != fact.message {
                problem.message = fact.message
                change.redescribed.append(problem)
            }
            if let occurrences = fact.occurrences, occurrences != problem.count {
                problem.count = occurrences
                problem.last = fact.last ?? date
            } else if let last = fact.last {
                problem.last = last
            }
            if let since = fact.since { problem.since = since }
            problems[id] = problem
        }
        return change
    }

    /// The same, for facts that are messages only.
    @discardableResult
    mutating func list(_ kind: Problem.Kind, messages current: [String: String], at date: Date = Date()) -> Change {
        list(kind, current.mapValues { ProblemFact($0) }, at: date)
    }

    /// Whether that problem is listed now.
    func contains(_ kind: Problem.Kind, _ subject: String) -> Bool { problems[Self.id(kind, subject)] != nil }

    func of(_ kind: Problem.Kind) -> [Problem] {
        problems.values.filter { $0.kind == kind }.sorted { $0.since < $1.since }
    }

    var all: [Problem] { problems.values.sorted { ($0.kind.rawValue, $0.since) < ($1.kind.rawValue, $1.since) } }
}
