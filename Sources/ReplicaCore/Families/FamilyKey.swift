import Foundation

/// How counters and logs name the entries they are made of.
///
/// Counters and logs are *families* of last-writer-wins entries. Their keys start with the
/// reserved character U+001F (ASCII "unit separator"), which no user key should start with, so
/// they can never collide with keys of `.replicated` registers or `replica-node set`:
///
/// ```
/// U+001F "counter/" <name> "/" <incarnation uuid, lowercase>   one slot per replica incarnation
/// U+001F "log/"     <name> "/" <element id>                    one entry per log element
/// ```
///
/// `<name>` is escaped (`%` -> `%25`, `/` -> `%2F`) so that a name never contains `/` and the
/// prefix of one family is never the prefix of another (`log/a/` vs `log/a%2Fb/`). The element
/// id is the rest of the key and may contain anything. `replica-node keys` hides these keys
/// unless given `--all`, which shows U+001F as `␟` (see `readable(_:)`).
public enum FamilyKey {
    /// The first character of every family key.
    public static let marker = "\u{1F}"

    /// Whether `key` belongs to a counter or a log (starts with U+001F).
    public static func isReserved(_ key: String) -> Bool { key.hasPrefix(marker) }

    /// `key` with its leading U+001F shown as `␟`, for listings.
    public static func readable(_ key: String) -> String {
        isReserved(key) ? "␟" + key.dropFirst() : key
    }

    static func escape(_ name: String) -> String {
        name.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F")
    }

    static func unescape(_ name: some StringProtocol) -> String {
        name.replacingOccurrences(of: "%2F", with: "/").replacingOccurrences(of: "%25", with: "%")
    }

    /// How messages and `replica-node status` name the entry `key`, in the user's terms: a
    /// register's key as it is, `counter visits` for any slot of counter `visits`, and
    /// `element <id> of log drinks` for an element of log `drinks`.
    public static func subject(of key: String) -> String {
        switch member(of: key) {
        case .counterSlot(let counter, _): "counter \(counter)"
        case .logElement(let log, let id): "element \(id) of log \(log)"
        case nil: isReserved(key) ? readable(key) : key
        }
    }

    /// What a family key stands for.
    public enum Member: Equatable, Sendable {
        case counterSlot(counter: String, incarnation: String)
        case logElement(log: String, id: String)
    }

    /// The counter slot or log element `key` is; nil for any other key (a register, or a
    /// family this version does not know).
    public static func member(of key: String) -> Member? {
        guard isReserved(key) else { return nil }
        let rest = key.dropFirst()
        if rest.hasPrefix("counter/") {
            let path = rest.dropFirst("counter/".count)
            guard let slash = path.lastIndex(of: "/") else { return nil }
            return .counterSlot(counter: unescape(path[..<slash]), incarnation: String(path[path.index(after: slash)...]))
        }
        if rest.hasPrefix("log/") {
            let path = rest.dropFirst("log/".count)
            guard let slash = path.firstIndex(of: "/") else { return nil }
            return .logElement(log: unescape(path[..<slash]), id: String(path[path.index(after: slash)...]))
        }
        return nil
    }

    /// The prefix shared by every slot of counter `name`.
    public static func counterPrefix(_ name: String) -> String { marker + "counter/" + escape(name) + "/" }

    /// The bytes a counter slot's key adds to the counter's (escaped) name: the marker,
    /// `counter/`, the slash and the incarnation (46).
    public static let counterSlotOverhead = counterSlot("", incarnation: UUID()).utf8.count

    /// The slot of counter `name` owned by one replica incarnation.
    public static func counterSlot(_ name: String, incarnation: UUID) -> String {
        counterPrefix(name) + incarnation.uuidString.lowercased()
    }

    /// The prefix shared by every element of log `name`.
    public static func logPrefix(_ name: String) -> String { marker + "log/" + escape(name) + "/" }

    /// The entry of one element of log `name`.
    public static func logElement(_ name: String, id: String) -> String { logPrefix(name) + id }
}
