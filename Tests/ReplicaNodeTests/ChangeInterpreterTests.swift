import Foundation
import ReplicaCore
@testable import ReplicaNode
import Testing

/// `watch`'s interpretation of applied entries, as a table: entry in, change in the user's
/// terms out.
struct ChangeInterpreterTests {
    let incarnationA = UUID()
    let incarnationB = UUID()

    func version(_ millis: UInt64, _ node: NodeID = "n1") -> Version {
        Version(timestamp: HybridTimestamp(wallMillis: millis, logical: 0), node: node)
    }

    func slot(_ name: String, _ incarnation: UUID, total: Int, at millis: UInt64) -> Entry {
        Entry(key: FamilyKey.counterSlot(name, incarnation: incarnation), version: version(millis), schema: CounterFamily.slotSchema,
              payload: Array(String(total).utf8))
    }

    @Test func countersShowDeltaAndTotalAcrossSlots() {
        var interpreter = ChangeInterpreter(prefix: "", families: [slot("visits", incarnationA, total: 5, at: 1)])
        let steps: [(Entry, Int, Int)] = [
            (slot("visits", incarnationA, total: 6, at: 2), 1, 6),
            (slot("visits", incarnationB, total: 10, at: 3), 10, 16),
            (slot("visits", incarnationA, total: 4, at: 4), -2, 14),
        ]
        for (entry, delta, total) in steps {
            let change = interpreter.interpret(Change(entry: entry, origin: .remote("n2")))
            #expect(change?.subject == .counter(name: "visits", delta: delta, total: total))
            #expect(change?.deliveredBy == "n2")
        }
    }

    @Test func logElementsAreAddedChangedAndRemoved() throws {
        let log = Drink.log()
        let drink = try Drink(name: "Mocha", mg: 90, date: Date(timeIntervalSince1970: 1_714_552_200))
        let put = try log.put(drink)
        let element = Entry(key: put.key, version: version(1), schema: put.schema, payload: put.payload)
        var interpreter = ChangeInterpreter(prefix: "drinks", families: [])
        let added = interpreter.interpret(Change(entry: element, origin: .local))
        guard case .log("drinks", let id, .added, _, let shown)? = added?.subject else {
            Issue.record("not an added drink: \(String(describing: added))")
            return
        }
        #expect(id == drink.id.uuidString.lowercased())
        #expect(shown == drink)
        #expect(added?.deliveredBy == nil)
        var edited = element
        edited.version = version(2)
        guard case .log(_, _, .changed, _, _)? = interpreter.interpret(Change(entry: edited, origin: .local))?.subject else {
            Issue.record("a second write of an element is a change")
            return
        }
        let removal = Entry(key: put.key, version: version(3), schema: put.schema, payload: nil)
        guard case .log(_, _, .removed, let last?, let removed)? = interpreter.interpret(Change(entry: removal, origin: .local))?.subject else {
            Issue.record("a tombstone is a removal showing what was removed")
            return
        }
        #expect(last == Data(put.payload ?? []))
        #expect(removed == drink)
    }

    @Test func registersAndThePrefix() {
        var interpreter = ChangeInterpreter(prefix: "config.", families: [])
        let theme = Entry(key: "config.theme", version: version(1), payload: Array("\"dark\"".utf8))
        #expect(interpreter.interpret(Change(entry: theme, origin: .local))?.subject == .register(key: "config.theme", value: Data("\"dark\"".utf8)))
        let removed = Entry(key: "config.theme", version: version(2), payload: nil)
        #expect(interpreter.interpret(Change(entry: removed, origin: .local))?.subject == .register(key: "config.theme", value: nil))
        #expect(interpreter.interpret(Change(entry: Entry(key: "other", version: version(3), payload: [0x31]), origin: .local)) == nil)
        #expect(interpreter.interpret(Change(entry: slot("visits", incarnationA, total: 1, at: 4), origin: .local)) == nil)
        #expect(FamilyKey.member(of: FamilyKey.counterSlot("a/b%c", incarnation: incarnationA)) == .counterSlot(counter: "a/b%c", incarnation: incarnationA.uuidString.lowercased()))
        #expect(FamilyKey.member(of: FamilyKey.logElement("to/do", id: "x/y")) == .logElement(log: "to/do", id: "x/y"))
        #expect(FamilyKey.member(of: "plain") == nil)
    }
}
