import Foundation
import ReplicaCore

/// Counters and the drink log on the control socket. They use the library's own `CounterFamily`,
/// `Replica.addToCounter` and `LogFamily<Drink>`, so `replica-node incr` and `@Shared(.counter)`
/// (or `drinks add` and `@Shared(.drinks())`) read and write the same entries the same way.
extension ControlServer {
    static var drinkLog: LogFamily<Drink> { ChangeInterpreter.drinkLog }

    static func answerFamily(_ request: ControlRequest, replica: Replica) async throws -> ControlReply {
        switch request {
        case .incr(let name, let by):
            try await replica.addToCounter(name, delta: by)
            return .counter(try await replica.counter(name))
        case .counter(let name):
            return .counter(try await replica.counter(name))
        case .addDrink(let received):
            // The same checks as the client's, made by `Drink` itself.
            let drink = try Drink(id: received.id, name: received.name, mg: received.mg, date: received.date)
            try await replica.write([drinkLog.put(drink)], refusingNewerSchemaThan: drinkLog.schema)
            return .drink(drink)
        case .listDrinks:
            let (drinks, problems) = drinkLog.elements(in: try await replica.entries(prefix: drinkLog.prefix))
            return .drinks(drinks, problems: problems.isEmpty ? nil : problems.map(\.error.description))
        case .removeDrink(let id):
            let key = drinkLog.key(forID: id.uuidString.lowercased())
            guard let entry = try await replica.entry(for: key), let drink = try drinkLog.element(in: entry) else {
                throw ControlFailure(.unknownKey, "unknown drink: \(id.uuidString.lowercased())")
            }
            try await replica.write([drinkLog.removal(ofID: drinkLog.id(of: drink))], refusingNewerSchemaThan: drinkLog.schema)
            return .drink(drink)
        case .get, .set, .delete, .keys, .keysPage, .exportPage, .importLines, .importTypedLines, .status, .watch, .watchCheck, .leave, .forget, .health:
            throw ControlFailure(.invalidRequest, "not a counter or drink request")
        }
    }
}
