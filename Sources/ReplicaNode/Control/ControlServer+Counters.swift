import Foundation
import ReplicaCore

/// Counters and the drink log on the control socket. They use the library's own `CounterFamily`,
/// `Replica.addToCounter` and `LogFamily<Drink>`, so `replica-node incr` and `@Shared(.counter)`
/// (or `drinks add` and `@Shared(.drinks())`) read and write the same entries the same way.
extension ControlServer {
    static let drinkLog = Drink.log()

    static func answerFamily(_ request: ControlRequest, replica: Replica) async throws -> ControlReply {
        do {
            switch request.command {
            case .incr:
                let name = try required(request.name, "name")
                try await replica.addToCounter(name, delta: request.by ?? 1)
                return ControlReply(counter: try await replica.counter(name))
            case .counter:
                return ControlReply(counter: try await replica.counter(try required(request.name, "name")))
            case .drinkAdd:
                guard let mg = request.mg else { throw ControlFailure(code: .invalidRequest, message: "missing mg") }
                let name = try required(request.name, "name")
                let drink: Drink
                do {
                    drink = try Drink(name: name, mg: mg, date: request.date ?? Date())
                } catch {
                    throw ControlFailure(code: .invalidValue, message: error.description)
                }
                try await replica.write([drinkLog.put(drink)], refusingNewerSchemaThan: drinkLog.schema)
                return ControlReply(drink: drink)
            case .drinkList:
                let (drinks, _) = drinkLog.elements(in: try await replica.entries(prefix: drinkLog.prefix))
                return ControlReply(drinks: drinks)
            case .drinkRemove:
                let text = try required(request.key, "id")
                guard let id = UUID(uuidString: text) else {
                    throw ControlFailure(code: .invalidValue, message: "invalid drink id: \(text)")
                }
                let key = drinkLog.key(forID: id.uuidString.lowercased())
                guard let entry = try await replica.entry(for: key), let drink = try drinkLog.element(in: entry) else {
                    throw ControlFailure(code: .unknownKey, message: "unknown drink: \(text)")
                }
                try await replica.write([drinkLog.removal(ofID: drinkLog.id(of: drink))], refusingNewerSchemaThan: drinkLog.schema)
                return ControlReply(drink: drink)
            default:
                throw ControlFailure(code: .invalidRequest, message: "not a counter or drink request")
            }
        } catch let error as SharingError {
            let code: ControlFailure.Code = if case .newerSchema = error { .newerSchema } else { .invalidValue }
            throw ControlFailure(code: code, message: error.description)
        }
    }
}
