import Foundation
import ReplicaCore

/// A request from a client command to its serving node, one JSON frame on the control socket
/// (`ipc://DATA/control.sock`). Each case carries exactly what it needs; the reply is a
/// `ControlReply`. See docs/protocol.md, "Control socket".
enum ControlRequest: Codable, Sendable, Equatable {
    case get(key: String)
    /// `json` is the value as JSON text.
    case set(key: String, json: String)
    case delete(key: String)
    /// Every live key at once: what clients before 0.28.0 send. Answered up to the client's
    /// reply limit (`ControlClient.maxReplyBytes`), as one reply.
    case keys(prefix: String)
    /// One page of the live keys, after `after` (nil: the first page); `all` includes the
    /// reserved keys of counters and logs. Answered with `.keysPage`. A node before 0.28.0
    /// answers it as malformed, and the client then asks with `keys`.
    case keysPage(prefix: String, after: String?, all: Bool)
    /// One page of the live registers (no counter or log keys), entries with their values,
    /// after `after`: `export`. Answered with `.entriesPage`.
    case exportPage(prefix: String, after: String?)
    /// JSON Lines, one `{"key": ..., "value": ...}` each, written in one commit. Sent as the
    /// bytes of the file so that neither side builds and re-encodes a value per line.
    case importLines(Data)
    /// As `importLines`, for a file some of whose lines carry `encoding` or `schema`. A request
    /// of its own so that a node older than 0.20.0 refuses it (as malformed) rather than store
    /// such lines wrongly: nodes before 0.19.0 ignore both fields, and would store a binary
    /// value as the JSON text of its base64, at schema 0, and replicate it.
    case importTypedLines(Data)
    case status
    /// Answered with `.watching`, then one `.change` per applied change until the client goes;
    /// a watch the node ends (it stops, or the client read too slowly and lost changes) ends
    /// with a `.failure` saying why.
    case watch(prefix: String)
    /// Whether this client's watch is still in place (`watch` asks when it has been quiet):
    /// `.watching` if so, else a `.failure` (the node restarted since). A node that predates
    /// this request answers it as a malformed one.
    case watchCheck
    case incr(name: String, by: Int)
    case counter(name: String)
    case addDrink(Drink)
    case listDrinks
    case removeDrink(id: UUID)
    /// Leave the cluster: answered with `.left` once the members hold this node's writes and
    /// acknowledged the departure (or the waits ran out); then the node stops, if it left. With
    /// `force`, it leaves even if no member holds its writes (nil: false).
    case leave(force: Bool?)
    /// Remove a dead member from the whole cluster.
    case forget(node: String)
    case health

    /// Whether serving it changes the data (a write, an import, an increment, a drink added or
    /// removed): one left unanswered may or may not have been applied. (`leave` and `forget` are
    /// not counted: asked again, each does what is left to do, and a node that left says so.)
    var isChange: Bool {
        switch self {
        case .set, .delete, .importLines, .importTypedLines, .incr, .addDrink, .removeDrink: true
        case .get, .keys, .keysPage, .exportPage, .status, .watch, .watchCheck, .counter, .listDrinks, .leave, .forget, .health: false
        }
    }
}

/// A node's answer to a `ControlRequest`.
enum ControlReply: Codable, Sendable {
    case entry(StoredEntry)
    case keys([String])
    /// A page of keys, and the key the next starts after (nil: the last page).
    case keysPage([String], next: String?)
    /// A page of entries, and the key the next starts after (nil: the last page).
    case entriesPage([StoredEntry], next: String?)
    /// How many keys an import wrote.
    case written(Int)
    case status(ReplicaStatus)
    case watching
    case change(WatchedChange)
    case counter(CounterSnapshot)
    case drink(Drink)
    /// The drinks this node can read, and why it cannot read others (a newer schema's; nil
    /// when none, so the reply is as before for clients that do not know the field).
    case drinks([Drink], problems: [String]?)
    /// How the departure went (`Departure.left` false: the node stayed).
    case left(Departure)
    case forgotten(node: String)
    case health(ReplicaHealth)
    case failure(ControlFailure)

    // One accessor per answer, for `ControlClient.call(_:expecting:)`.
    var entry: StoredEntry? { if case .entry(let value) = self { value } else { nil } }
    var keys: [String]? { if case .keys(let value) = self { value } else { nil } }
    var keysPage: ListedPage<String>? { if case .keysPage(let keys, let next) = self { ListedPage(items: keys, next: next) } else { nil } }
    var entriesPage: ListedPage<StoredEntry>? { if case .entriesPage(let entries, let next) = self { ListedPage(items: entries, next: next) } else { nil } }
    var written: Int? { if case .written(let value) = self { value } else { nil } }
    var status: ReplicaStatus? { if case .status(let value) = self { value } else { nil } }
    var watching: Void? { if case .watching = self { () } else { nil } }
    var change: WatchedChange? { if case .change(let value) = self { value } else { nil } }
    var counter: CounterSnapshot? { if case .counter(let value) = self { value } else { nil } }
    var drink: Drink? { if case .drink(let value) = self { value } else { nil } }
    var drinkList: DrinkList? { if case .drinks(let drinks, let problems) = self { DrinkList(drinks: drinks, problems: problems ?? []) } else { nil } }
    var left: Departure? { if case .left(let value) = self { value } else { nil } }
    var forgotten: String? { if case .forgotten(let value) = self { value } else { nil } }
    var health: ReplicaHealth? { if case .health(let value) = self { value } else { nil } }
}

/// `drinks list`'s answer: the drinks, and the entries of the drink log that could not be read.
struct DrinkList: Sendable, Equatable {
    var drinks: [Drink]
    var problems: [String]
}

/// Why a node refused or failed a request; clients print `message` as their one-line error.
struct ControlFailure: Codable, Sendable, Error, CustomStringConvertible {
    enum Code: String, Codable, Sendable {
        case unknownKey, invalidRequest, invalidValue, saveFailed, shutDown, internalError, newerSchema
    }

    var code: Code
    var message: String
    var description: String { message }

    /// The message of the `.invalidRequest` failure a request the node cannot decode gets (a
    /// request of a newer version, such as `watchCheck` sent to an older node).
    static let malformedRequest = "malformed control request"

    /// The answer of a node that cannot decode the request: an older one.
    var isMalformedRequest: Bool { code == .invalidRequest && message == Self.malformedRequest }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The failure an error from the replica or the sharing layer stands for.
    init(_ error: any Error) {
        switch error {
        case let failure as ControlFailure:
            self = failure
        case let error as ReplicaError:
            let code: Code = switch error {
            case .saveFailed, .clockSkew, .clockUnchecked, .clockAhead, .identityClash: .saveFailed
            case .shutDown, .leaving: .shutDown
            case .invalidKey, .valueTooLarge: .invalidValue
            }
            // A request read just before the node began to stop, and answered after its replica
            // shut down: told what every client of a stopping node is told.
            self.init(code, error == .shutDown ? ControlServer.shuttingDownFailure.message : error.description)
        case let error as SharingError:
            let code: Code = if case .newerSchema = error { .newerSchema } else { .invalidValue }
            self.init(code, error.description)
        case let error as Replica.ForgetError:
            self.init(.invalidRequest, error.description)
        case let error as Drink.Invalid:
            self.init(.invalidValue, error.description)
        case let error as JSONLines.BadLine:
            self.init(.invalidValue, error.description)
        default:
            self.init(.internalError, "\(error)")
        }
    }
}

/// An entry as the node stores it: the payload is bytes (base64 in the control protocol's
/// JSON), whatever codec wrote them; clients decide how to show them.
struct StoredEntry: Codable, Sendable {
    var key: String
    var version: Version
    var schema: UInt16
    /// nil: the key was removed (a tombstone).
    var payload: Data?

    init(_ entry: Entry) {
        key = entry.key
        version = entry.version
        schema = entry.schema
        payload = entry.payload.map { Data($0) }
    }
}

/// One applied change as `watch` shows it: in the terms of the value it changed.
struct WatchedChange: Codable, Sendable, Equatable {
    enum Subject: Codable, Sendable, Equatable {
        /// A key written by `set` or `.replicated`; value nil: removed.
        case register(key: String, value: Data?)
        /// A counter slot moved: the counter changed by `delta` to `total` (on this node).
        case counter(name: String, delta: Int, total: Int)
        /// An element of a log; `element` is its payload (on removal, the last one this watch
        /// saw, if any), and `drink` the element of the drink log decoded (older schemas
        /// migrated) by the node.
        case log(name: String, id: String, action: LogAction, element: Data?, drink: Drink?)
    }

    enum LogAction: String, Codable, Sendable {
        case added, changed, removed
    }

    var subject: Subject
    var version: Version
    /// How it reached this node: nil for its own write, else the peer that delivered it.
    var deliveredBy: String?
}
