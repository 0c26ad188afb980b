/// Which seeds a node stops asking before they answer: those at the address of a member it
/// already hears. A seed is only a way in; once the node at that address is an alive member,
/// dialled as one, its join reply brings nothing the member exchanges do not. Without this, a
/// seed whose reply this node refuses (one of an earlier version that sends a table of over
/// 1,024 records as one message) was sent a join every 2 s, and its reply counted as
/// malformed, for as long as the node ran.
enum SeedRetirement {
    /// The ids of `seeds` at an address of `aliveMembers`.
    static func redundant(seeds: [(id: Int, address: Endpoint)], aliveMembers: Set<Endpoint>) -> [Int] {
        seeds.filter { aliveMembers.contains($0.address) }.map(\.id)
    }

    /// Seeds learnt from discovery beacons, which any host on the network can send, each naming
    /// another node and address: every one was a socket pair dialled and asked to join for as
    /// long as the node ran, until libzmq's sockets ran out and no member could be dialled
    ///. So at most `maxDiscovered` at once, and each for `discoveredLife` unless its
    /// node becomes a member heard here (then `redundant` retires it); its next beacon brings it back.
    static let maxDiscovered = 16
    static let discoveredLife: Duration = .seconds(30)

    /// Whether another discovered seed may be opened now: one a second at most (a flood of
    /// beacons would open and close a socket pair for each; joining through one seed brings
    /// the whole member table anyway).
    static func mayDiscover(seeds: [MonotonicInstant?], now: MonotonicInstant) -> Bool {
        guard let newest = seeds.compactMap({ $0 }).max() else { return true }
        return now - newest >= .seconds(1)
    }

    /// The ids of discovered seeds to close (`discoveredAt` nil: a configured seed, kept): those
    /// past their life, then the oldest beyond `maxDiscovered - making` (`making`: 1 when
    /// about to open another).
    static func discoveredToClose(seeds: [(id: Int, discoveredAt: MonotonicInstant?)], making: Int = 0,
                                  now: MonotonicInstant) -> [Int] {
        let discovered = seeds.compactMap { seed in seed.discoveredAt.map { (id: seed.id, at: $0) } }.sorted { $0.at < $1.at }
        let expired = discovered.filter { now - $0.at >= discoveredLife }
        let kept = discovered.filter { now - $0.at < discoveredLife }
        let excess = max(0, kept.count + making - maxDiscovered)
        return (expired + kept.prefix(excess)).map(\.id)
    }
}
