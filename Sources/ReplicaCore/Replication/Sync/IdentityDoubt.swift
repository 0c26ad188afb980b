/// Identities (this node's or members') that two processes may have used in this life, and
/// this node's store serial when the last came into doubt.
///
/// Of a doubted identity, "its writes" and "its reports" no longer mean one thing, so sync
/// replies leave out nothing of it for the rest of this life (`HeldByRequester`). Replies left
/// out some before the doubt arose, and the marks they completed would keep a requester from
/// ever fetching what that wrongly left out: marks given until then are no longer honoured.
struct IdentityDoubt: Sendable {
    private(set) var doubted: Set<NodeID> = []
    private(set) var serialAtLastDoubt: UInt64?

    /// `node` came into doubt with the store at `serial`; returns whether it is new.
    @discardableResult
    mutating func doubt(_ node: NodeID, serial: UInt64) -> Bool {
        guard doubted.insert(node).inserted else { return false }
        serialAtLastDoubt = serial
        return true
    }

    /// Whether a mark given at `serial` still stands: given after the last doubt arose.
    func honours(markSerial serial: UInt64) -> Bool { serialAtLastDoubt.map { serial > $0 } ?? true }
}
