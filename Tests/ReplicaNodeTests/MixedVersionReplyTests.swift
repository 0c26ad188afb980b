import Foundation
import ReplicaCore
@testable import ReplicaNode
import Testing

/// A newer client talking to an older node during a rolling upgrade: counters the node does not
/// send read as 0, and a reply the client cannot read says which field and why, instead of
/// Foundation's description of a `DecodingError`.
@Suite struct MixedVersionReplyTests {
    @Test func countersAnOlderNodeDoesNotSendReadAsZero() throws {
        var counters = ReplicaStatus.Counters()
        counters.updatesApplied = 7
        counters.revokedConnectionsEnded = 2
        let encoded = try JSONEncoder().encode(counters)
        #expect(try JSONDecoder().decode(ReplicaStatus.Counters.self, from: encoded) == counters, "every field round-trips")

        var older = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        older.removeValue(forKey: "revokedConnectionsEnded")
        let decoded = try JSONDecoder().decode(ReplicaStatus.Counters.self, from: JSONSerialization.data(withJSONObject: older))
        #expect(decoded.revokedConnectionsEnded == 0)
        #expect(decoded.updatesApplied == 7)
    }

    @Test func anUnreadableReplyNamesTheFieldAndTheVersions() throws {
        let missing = #"{"status": {"_0": {}}}"#
        var reason = ""
        do {
            _ = try JSONDecoder().decode(ControlReply.self, from: Data(missing.utf8))
            Issue.record("decoded a status without fields")
        } catch {
            reason = ControlClient.UnreadableReply.reason(error)
        }
        #expect(reason.hasPrefix("no field status._0."), "\(reason)")
        let error = ControlClient.UnreadableReply(dataDirectory: URL(fileURLWithPath: "/data/node1"), reason: reason)
        #expect(error.description.contains("/data/node1"))
        #expect(error.description.contains(ReplicaNodeCommand.configuration.version))
    }
}
