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
}
