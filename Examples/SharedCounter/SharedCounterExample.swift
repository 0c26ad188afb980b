// A one-minute read: two replicas in one process, one shared key, changes seen on both.
// Run: swift run shared-counter-example
import Foundation
import ReplicaCore

@main
struct SharedCounterExample {
    static func main() async throws {
        // Two nodes on loopback, each the other's peer. In an app you start one, bound to your LAN.
        let alice = try Replica(ReplicaConfiguration(
            node: "alice", listen: Endpoint(host: "127.0.0.1", port: 7301),
            peers: [Endpoint(host: "127.0.0.1", port: 7303)], storage: .memory))
        let bob = try Replica(ReplicaConfiguration(
            node: "bob", listen: Endpoint(host: "127.0.0.1", port: 7303),
            peers: [Endpoint(host: "127.0.0.1", port: 7301)], storage: .memory))

        // The same key on each node. 0 is used only if the key has no stored value yet.
        @Shared(.replicated("visits", on: alice)) var visitsOnAlice = 0
        @Shared(.replicated("visits", on: bob)) var visitsOnBob = 0

        // Observe Bob's copy: the async sequence yields the current value, then every change.
        let watcher = Task {
            for await value in $visitsOnBob.values {
                print("bob sees visits = \(value)")
                if value == 3 { break }
            }
        }

        // Mutate with exclusive access; each change is saved (durably, then published) in order.
        for _ in 1...3 {
            $visitsOnAlice.withLock { $0 += 1 }
        }
        try await $visitsOnAlice.save()  // wait until the latest value is committed
        await watcher.value
        print("alice: \(visitsOnAlice), bob: \(visitsOnBob), save error: \($visitsOnAlice.saveError.map { "\($0)" } ?? "none")")
    }
}
