/// The arithmetic of a value stored as a family of last-writer-wins entries: how the entries
/// make the value, and how a change of the value becomes writes. `CounterFamily` (one slot per
/// replica incarnation, summed) and `LogFamily` (one entry per element) are the two built in.
///
/// `EntryFamilyKey` does everything else the same way for every family: loading, subscribing,
/// saving deltas, reporting unreadable entries and refused changes, and binding to a replica.
///
/// Words used below: a *part* is what one entry holds, decoded (a slot's total, an element);
/// an *edit* is a local change of one entry not yet written. Entries are named by their keys.
public protocol EntryFamily: Sendable {
    associatedtype Value: Sendable
    associatedtype Part: Sendable & Equatable
    associatedtype Edit: Sendable

    var name: String { get }
    /// How code names the key, for messages: `.counter("visits")`.
    var keyDescription: String { get }
    /// How `loadError`, `saveError` and `replica-node status` name the value: `counter visits`.
    var subject: String { get }
    /// The prefix of every entry of the family.
    var prefix: String { get }

    /// How messages and status name one entry (a counter: the counter; a log: the element).
    func subject(ofEntry key: String) -> String
    /// The part an entry holds (nil: removed), or why it cannot be read, in the user's terms.
    func part(of entry: Entry) throws(SharingError) -> Part?
    /// What an entry shows with a local edit laid over it.
    func applying(_ edit: Edit, to part: Part?) -> Part?
    /// One edit that does what `earlier` then `later` do.
    func combining(_ earlier: Edit, _ later: Edit) -> Edit
    /// The value that these parts (by entry key) make.
    func value(of parts: [String: Part]) -> Value
    /// Lays changed parts over `value`. Where `value` no longer matches a change's `old` part,
    /// the user changed it and has not saved yet: that local change stays (it is saved next).
    func apply(_ changes: [PartChange<Part>], to value: inout Value)
    /// The edits that take the parts the key last showed (`shown`, by entry key) to `value`, and
    /// the changes of `value` that cannot be saved at all (with the part they show and why).
    func edits(from shown: [String: Part], to value: Value, on replica: Replica) -> FamilyEdits<Self>
    /// Writes `edits` in one commit and returns the committed entries; an edit this program
    /// refuses (too large, over newer-schema data) is returned with why, the others are written.
    /// Throws when nothing could be written: the key keeps the edits and the next save retries.
    func write(_ edits: [String: Edit], to replica: Replica) async throws -> FamilyWrite
    /// Whether `value` is in the family's order (a log's sort order); checked after each save.
    func isArranged(_ value: Value) -> Bool
    /// Puts `value` in the family's order.
    func arrange(_ value: inout Value)
}

extension EntryFamily {
    public func isArranged(_ value: Value) -> Bool { true }
    public func arrange(_ value: inout Value) {}
}

/// A part of a family's value that changed in storage (or in the key's books).
public struct PartChange<Part: Sendable>: Sendable {
    public var key: String
    public var old: Part?
    public var new: Part?

    public init(key: String, old: Part?, new: Part?) {
        self.key = key
        self.old = old
        self.new = new
    }
}

/// What a save must write, by entry key, and what it cannot save.
public struct FamilyEdits<Family: EntryFamily>: Sendable {
    public var edits: [String: Family.Edit]
    /// Changes that cannot be saved (a repeated log id): what they show, and why.
    public var refused: [String: (shows: Family.Part?, error: SharingError)]

    public init(edits: [String: Family.Edit] = [:], refused: [String: (shows: Family.Part?, error: SharingError)] = [:]) {
        self.edits = edits
        self.refused = refused
    }
}

/// The outcome of `EntryFamily.write`.
public struct FamilyWrite: Sendable {
    public var committed: [Entry]
    /// Edits not written, by entry key, and why.
    public var refused: [String: SharingError]

    public init(committed: [Entry], refused: [String: SharingError] = [:]) {
        self.committed = committed
        self.refused = refused
    }
}
