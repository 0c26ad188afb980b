/// The seeds this node asks to let it join (each a connection of its own: `SeedContact`), and
/// when it asks them.
struct Seeding {
    var seeds: [SeedContact] = []
    var nextID = 0
    /// The seeds are contacted on the loop's first turn.
    var contacted = false
    /// When a node that hears no member asks its seeds again.
    var recontact = SeedRecontact()
    /// When a discovery beacon of a node we may join was last heard (see `hasMembersOrSeeds`).
    var lastBeaconHeard: MonotonicInstant?
}
