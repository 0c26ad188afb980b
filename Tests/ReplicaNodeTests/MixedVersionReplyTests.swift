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

    /// Every counter, each with its own value, survives encoding and decoding (a counter added
    /// later and left out of `Counters.init(from:)` would come back as 0), and each one missing
    /// from a reply reads as 0 while the others keep their values.
    @Test func everyCounterRoundTripsAndEachMayBeMissing() throws {
        let labels = Mirror(reflecting: ReplicaStatus.Counters()).children.compactMap(\.label)
        #expect(labels.count >= 21)
        let full = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($1, $0 + 1) })
        let decoded = try JSONDecoder().decode(ReplicaStatus.Counters.self, from: JSONSerialization.data(withJSONObject: full))
        let reencoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(decoded)) as? [String: Int])
        #expect(reencoded == full)
        for label in labels {
            var partial = full
            partial.removeValue(forKey: label)
            let read = try JSONDecoder().decode(ReplicaStatus.Counters.self, from: JSONSerialization.data(withJSONObject: partial))
            let values = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(read)) as? [String: Int])
            #expect(values[label] == 0, "\(label)")
            #expect(values.filter { $0.key != label } == partial)
        }
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
