import Foundation
import Logging
import Observation
import ReplicaCore

/// One node of a Coffee Tracker cluster, run as a process of its own:
///
///     coffee-tracker --id alice --listen 127.0.0.1:7401 --peer 127.0.0.1:7403 --data /tmp/alice \
///                    --visits 1000 --drinks 50 --expect-visits 2000 --expect-drinks 100
///
/// It records its visits and drinks, then watches the model (through Observation) until it shows
/// every node's visits and drinks, in date order, and the peer has everything it has. It exits
/// 0 then, or 1 after `--timeout` seconds. `Examples/CoffeeTracker/converge.sh` runs two.
@main
struct CoffeeTracker {
    static func main() async {
        do {
            let options = try Options(CommandLine.arguments.dropFirst())
            exit(try await run(options) ? 0 : 1)
        } catch {
            FileHandle.standardError.write(Data("coffee-tracker: \(error)\n".utf8))
            exit(64)
        }
    }

    @MainActor
    static func run(_ options: Options) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(options.timeout)
        // Made before the replica exists, as a SwiftUI App's @State would be: it binds below.
        let model = CoffeeModel()

        // Quiet the replica's logging: warnings and errors only.
        var logger = Logger(label: "coffee.\(options.id)")
        logger.logLevel = .warning
        var configuration = ReplicaConfiguration(
            node: options.id, listen: options.listen, peers: options.peers, storage: .directory(options.data))
        configuration.security = .insecure  // the library's default, said out loud: see docs/sharing.md for CURVE
        let replica = try Replica(configuration, logger: logger)
        Replica.setDefault(replica)
        let converged = try await track(model, on: replica, options: options, until: deadline)
        await replica.shutdown()
        return converged
    }

    @MainActor
    static func track(_ model: CoffeeModel, on replica: Replica, options: Options, until deadline: ContinuousClock.Instant) async throws -> Bool {
        guard try await waitForPeers(options.peers.count, of: replica, until: deadline) else {
            print("\(options.id): no peer connected before the deadline")
            return false
        }
        let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01, a fixed day so both nodes agree
        for _ in 0..<options.visits { model.recordVisit() }
        for index in 0..<options.drinks {
            // Distinct dates on every node (node index in milliseconds), so the merged log has one order.
            let date = start.addingTimeInterval(Double(index) * 60 + Double(options.nodeIndex) / 1000)
            model.log(try Drink(name: "\(options.id) #\(index)", mg: 10, date: date))
        }
        try await model.saveRecords()
        if let limit = options.dailyLimit { try await model.setDailyLimit(limit) }
        print("\(options.id): recorded \(options.visits) visits and \(options.drinks) drinks")

        // Watch the model until it shows everything, as a view would.
        while true {
            let (shown, changed) = observe {
                (visits: model.visits, drinks: model.drinks.count, limit: model.settings.dailyLimitMg,
                 ordered: model.drinks.map(\.date) == model.drinks.map(\.date).sorted())
            }
            let converged = shown.visits == options.expectedVisits && shown.drinks == options.expectedDrinks && shown.ordered
                && options.expectedLimit.map { $0 == shown.limit } ?? true
            if converged, await peersHaveEverything(replica) {
                print("\(options.id): converged: \(shown.visits) visits, \(shown.drinks) drinks in date order, "
                      + "daily limit \(shown.limit) mg, \(model.caffeine(since: start)) mg logged")
                return model.problems.isEmpty
            }
            guard ContinuousClock.now < deadline else {
                print("\(options.id): not converged by the deadline: \(shown); problems: \(model.problems)")
                return false
            }
            // The next change of the model, or a second later (peers' digests are not observed).
            _ = await changed.next(orUntil: min(deadline, .now + .seconds(1)))
        }
    }

    /// Reads `read` inside Observation tracking: its value now, and a signal for its next change.
    @MainActor
    static func observe<T>(_ read: () -> T) -> (T, ChangeSignal) {
        let signal = ChangeSignal()
        let value = withObservationTracking(read, onChange: { signal.fire() })
        return (value, signal)
    }

    /// Waits until `count` members have joined, are alive and have finished a first sync with
    /// this node (the status lists members once they have joined).
    static func waitForPeers(_ count: Int, of replica: Replica, until deadline: ContinuousClock.Instant) async throws -> Bool {
        while ContinuousClock.now < deadline {
            let ready = await replica.status().peers.filter { $0.state == .alive && $0.syncsCompleted > 0 }
            if ready.count >= count { return true }
            try await Task.sleep(for: .milliseconds(100))  // polling a condition, with a deadline
        }
        return false
    }

    /// Whether every peer has what this node has (equal digests), or has gone (it has already
    /// seen everything it waited for, and left).
    static func peersHaveEverything(_ replica: Replica) async -> Bool {
        await replica.status().peers.allSatisfy { $0.inSync || ["down", "left"].contains($0.state.rawValue) }
    }
}

/// Fires once, when an observed value changes.
final class ChangeSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func fire() { continuation.yield() }

    /// Whether the change came before `deadline` (status that is not observed, such as peers'
    /// digests, is checked again then).
    func next(orUntil deadline: ContinuousClock.Instant) async -> Bool {
        let stream = stream
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { for await _ in stream { return true }; return false }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

struct Options {
    var id: NodeID
    var nodeIndex = 0
    var listen: Endpoint
    var peers: [Endpoint] = []
    var data: URL
    var visits = 0
    var drinks = 0
    var dailyLimit: Double?
    var expectedVisits = 0
    var expectedDrinks = 0
    var expectedLimit: Double?
    var timeout = 120

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    init(_ arguments: ArraySlice<String>) throws {
        var values: [String: [String]] = [:]
        var rest = arguments
        while let flag = rest.popFirst() {
            guard flag.hasPrefix("--"), let value = rest.popFirst() else { throw Invalid(description: "expected --flag VALUE at \(flag)") }
            values[String(flag.dropFirst(2)), default: []].append(value)
        }
        func one(_ name: String) throws -> String {
            guard let value = values[name]?.last else { throw Invalid(description: "missing --\(name)") }
            return value
        }
        func number<N: LosslessStringConvertible>(_ name: String, default fallback: N) throws -> N {
            guard let text = values[name]?.last else { return fallback }
            guard let value = N(text) else { throw Invalid(description: "--\(name) \(text) is not a number") }
            return value
        }
        guard let id = NodeID(rawValue: try one("id")) else { throw Invalid(description: "invalid --id") }
        guard let listen = Endpoint(try one("listen")) else { throw Invalid(description: "--listen needs HOST:PORT") }
        self.id = id
        self.listen = listen
        peers = try (values["peer"] ?? []).map { text in
            guard let peer = Endpoint(text) else { throw Invalid(description: "--peer \(text) needs HOST:PORT") }
            return peer
        }
        data = URL(fileURLWithPath: try one("data"))
        nodeIndex = try number("node-index", default: 0)
        visits = try number("visits", default: 0)
        drinks = try number("drinks", default: 0)
        if values["daily-limit"] != nil { dailyLimit = try number("daily-limit", default: 0.0) }
        expectedVisits = try number("expect-visits", default: visits)
        expectedDrinks = try number("expect-drinks", default: drinks)
        if values["expect-limit"] != nil { expectedLimit = try number("expect-limit", default: 0.0) }
        timeout = try number("timeout", default: 120)
    }
}
