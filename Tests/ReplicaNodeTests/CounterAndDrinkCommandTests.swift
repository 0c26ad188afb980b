import Foundation
import ReplicaCore
@testable import ReplicaNode
import Testing

/// `incr`, `counter` and `drinks` against real serving nodes.
@Suite(.serialized) struct CounterAndDrinkCommandTests {
    @Test func incrementsOnTwoNodesAddUp() async throws {
        let cluster = try ProcessCluster(size: 2, name: "counters")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())

        #expect(try cluster.client(0, ["counter", "visits"]).stdout == "0\n")
        #expect(try cluster.client(0, ["incr", "visits"]).stdout == "1\n")
        #expect(try cluster.client(0, ["incr", "visits", "--by", "5"]).stdout == "6\n")
        let onSecond = try cluster.client(1, ["incr", "visits", "--by", "-2"])
        #expect(onSecond.status == 0)
        #expect(try await eventually { try cluster.client(0, ["counter", "visits"]).stdout == "4\n" })
        #expect(try await eventually { try cluster.client(1, ["counter", "visits"]).stdout == "4\n" })

        let json = try cluster.client(1, ["counter", "visits", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["value"] as? Int == 4)
        #expect((object["slots"] as? [[String: Any]])?.count == 2, "one slot per node")
        let incrJSON = try cluster.client(0, ["incr", "visits", "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(incrJSON.stdout.utf8)) as? [String: Any])?["value"] as? Int == 5)

        // Counter slots are hidden from `keys` unless --all.
        _ = try cluster.client(0, ["set", "plain", "1"])
        #expect(try cluster.client(0, ["keys"]).stdout == "plain\n")
        #expect(try cluster.client(0, ["keys", "--all"]).stdout.contains("␟counter/visits/"))
    }

    @Test func counterCommandErrors() async throws {
        let cluster = try ProcessCluster(size: 1, name: "counter-errors")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        let notANumber = try cluster.client(0, ["incr", "visits", "--by", "lots"])
        #expect(notANumber.status == 64)
        let missingName = try cluster.client(0, ["incr"])
        #expect(missingName.status == 64)
        #expect(try cluster.client(0, ["incr", "big", "--by", "\(Int.max)"]).status == 0)
        let overflow = try cluster.client(0, ["incr", "big"])
        #expect(overflow.status == 1)
        #expect(overflow.stderr == "replica-node: counter big would overflow\n")
        #expect(try cluster.client(0, ["counter", "big"]).stdout == "\(Int.max)\n")
        let notRunning = try replicaNode(["counter", "x", "--data", cluster.root.appendingPathComponent("nowhere").path])
        #expect(notRunning.status == 1)
        #expect(notRunning.stderr.hasPrefix("replica-node: no replica-node is serving"))
        #expect(try replicaNode(["incr", "--help"]).stdout.contains("  replica-node incr visits"))
        #expect(try replicaNode(["counter", "--help"]).stdout.contains("  replica-node counter visits"))
    }

    @Test func drinksAddListAndRemoveAcrossNodes() async throws {
        let cluster = try ProcessCluster(size: 2, name: "drinks")
        defer { cluster.stop() }
        #expect(try await cluster.waitUntilConnected())

        let latte = try cluster.client(0, ["drinks", "add", "--name", "Latte", "--mg", "75", "--date", "2024-05-01T09:00:00Z"])
        #expect(latte.status == 0)
        let latteID = latte.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: latteID) != nil)
        let espresso = try cluster.client(1, ["drinks", "add", "--name", "Espresso", "--mg", "63.5", "--date", "2024-05-01T08:00:00.250Z", "--json"])
        let espressoObject = try #require(try JSONSerialization.jsonObject(with: Data(espresso.stdout.utf8)) as? [String: Any])
        #expect(espressoObject["name"] as? String == "Espresso")
        #expect(espressoObject["mg"] as? Double == 63.5)
        let espressoID = try #require(espressoObject["id"] as? String)

        let expected = """
            2024-05-01T08:00:00.250Z  63.5 mg  Espresso  \(espressoID)
            2024-05-01T09:00:00.000Z  75 mg  Latte  \(latteID)

            """
        #expect(try await eventually { try cluster.client(0, ["drinks", "list"]).stdout == expected })
        #expect(try await eventually { try cluster.client(1, ["drinks", "list"]).stdout == expected })
        let listJSON = try cluster.client(1, ["drinks", "list", "--json"])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(listJSON.stdout.utf8)) as? [[String: Any]])
        #expect(array.map { $0["id"] as? String } == [espressoID, latteID])

        let removed = try cluster.client(1, ["drinks", "remove", latteID.uppercased()])
        #expect(removed.status == 0)
        #expect(removed.stdout == "OK removed \(latteID)\n")
        #expect(try await eventually { try cluster.client(0, ["drinks", "list"]).stdout == "2024-05-01T08:00:00.250Z  63.5 mg  Espresso  \(espressoID)\n" })
        let again = try cluster.client(0, ["drinks", "remove", latteID])
        #expect(again.status == 1)
        #expect(again.stderr == "replica-node: unknown drink: \(latteID)\n")
    }

    /// A drink or counter slot written by a newer schema (a newer program on another member)
    /// is not hidden: `drinks list` and `counter` say so on stderr, `counter --json` in
    /// "problems"; both still succeed with what they can read.
    @Test func entriesOfANewerSchemaAreReported() async throws {
        let libraryPort = TestPorts.pair()
        let cluster = try ProcessCluster(size: 1, name: "newer-schema") { _ in
            ["node1": ["--insecure", "--peer", "lib@127.0.0.1:\(libraryPort)"]]
        }
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })
        #expect(try cluster.client(0, ["incr", "visits", "--by", "3"]).status == 0)
        let latte = try cluster.client(0, ["drinks", "add", "--name", "Latte", "--mg", "75", "--date", "2024-05-01T09:00:00Z"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let library = try Replica(ReplicaConfiguration(
            node: "lib", listen: Endpoint(host: "127.0.0.1", port: libraryPort),
            peers: [Endpoint(host: "127.0.0.1", port: cluster.nodes[0].port)], storage: .memory))
        let log = Drink.log()
        let future = UUID().uuidString.lowercased()
        try await library.write([
            Replica.WriteRequest(key: log.key(forID: future), payload: Array(#"{"shape":"of tomorrow"}"#.utf8), schema: log.schema + 1),
            Replica.WriteRequest(key: FamilyKey.counterSlot("visits", incarnation: UUID()), payload: Array("5".utf8), schema: CounterFamily.slotSchema + 1),
        ])
        #expect(try await eventually { try cluster.client(0, ["counter", "visits", "--json"]).stdout.contains("newer than") })
        #expect(try await eventually { try cluster.client(0, ["drinks", "list"]).stderr.contains(future) })
        await library.shutdown()

        let list = try cluster.client(0, ["drinks", "list"])
        #expect(list.status == 0)
        #expect(list.stdout == "2024-05-01T09:00:00.000Z  75 mg  Latte  \(latte)\n", "the readable drinks, as before")
        let drinkWarning = "warning: the value of element \(future) of log drinks has schema version \(log.schema + 1), newer than \(log.schema) known here"
        #expect(list.stderr.hasPrefix(drinkWarning), "\(list.stderr)")
        #expect(list.stderr.split(separator: "\n").count == 1)
        let listJSON = try cluster.client(0, ["drinks", "list", "--json"])
        #expect(listJSON.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(listJSON.stdout.utf8)) as? [[String: Any]])
        #expect(array.map { $0["id"] as? String } == [latte], "stdout stays the array tools parse")
        #expect(listJSON.stderr.hasPrefix(drinkWarning))

        let counter = try cluster.client(0, ["counter", "visits"])
        #expect(counter.status == 0)
        #expect(counter.stdout == "3\n", "the slot it cannot read is left out of the sum")
        #expect(counter.stderr.hasPrefix("warning: the value of counter visits has schema version \(CounterFamily.slotSchema + 1)"), "\(counter.stderr)")
        #expect(counter.stderr.split(separator: "\n").count == 1)
        let counterJSON = try cluster.client(0, ["counter", "visits", "--json"])
        #expect(counterJSON.status == 0 && counterJSON.stderr.isEmpty)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(counterJSON.stdout.utf8)) as? [String: Any])
        #expect(object["value"] as? Int == 3)
        #expect((object["problems"] as? [String])?.count == 1)
    }

    /// The drinks reply carries its problems only when there are some: a reply without them
    /// (an older node's) still decodes, and one with none is encoded as before.
    @Test func drinksReplyIsCompatibleBothWays() throws {
        let older = try JSONDecoder().decode(ControlReply.self, from: Data(#"{"drinks":{"_0":[]}}"#.utf8))
        #expect(older.drinkList == DrinkList(drinks: [], problems: []))
        #expect(String(decoding: try JSONEncoder().encode(ControlReply.drinks([], problems: nil)), as: UTF8.self) == #"{"drinks":{"_0":[]}}"#)
        let newer = try JSONDecoder().decode(ControlReply.self, from: try JSONEncoder().encode(ControlReply.drinks([], problems: ["p"])))
        #expect(newer.drinkList?.problems == ["p"])
    }

    @Test func drinkCommandErrors() async throws {
        let cluster = try ProcessCluster(size: 1, name: "drink-errors")
        defer { cluster.stop() }
        #expect(try await eventually { try cluster.status(0) != nil })

        let negative = try cluster.client(0, ["drinks", "add", "--name", "Decaf", "--mg", "-5"])
        #expect(negative.status == 64)
        #expect(negative.stderr == "replica-node: invalid drink: caffeine must be 0 mg or more (got -5.0)\n")
        let unnamed = try cluster.client(0, ["drinks", "add", "--name", " ", "--mg", "5"])
        #expect(unnamed.status == 64)
        #expect(unnamed.stderr == "replica-node: invalid drink: a drink needs a name\n")
        let badDate = try cluster.client(0, ["drinks", "add", "--name", "Tea", "--mg", "30", "--date", "yesterday"])
        #expect(badDate.status == 64)
        #expect(badDate.stderr == "replica-node: invalid --date yesterday: expected ISO 8601 such as 2024-05-01T08:30:00Z\n")
        let badID = try cluster.client(0, ["drinks", "remove", "not-a-uuid"])
        #expect(badID.status == 64)
        #expect(badID.stderr.hasPrefix("replica-node: invalid drink id not-a-uuid"))
        let unknown = try cluster.client(0, ["drinks", "remove", "5f0c6a3e-8f1e-4c0e-9a51-0d8f5b7e2c11"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "replica-node: unknown drink: 5f0c6a3e-8f1e-4c0e-9a51-0d8f5b7e2c11\n")
        let missingMg = try cluster.client(0, ["drinks", "add", "--name", "Tea"])
        #expect(missingMg.status == 64)
        #expect(try cluster.client(0, ["drinks", "list"]).stdout.isEmpty, "nothing was added")
        for help in [["drinks", "--help"], ["drinks", "add", "--help"], ["drinks", "list", "--help"], ["drinks", "remove", "--help"]] {
            #expect(try replicaNode(help).stdout.contains("  replica-node drinks"))
        }
    }
}
