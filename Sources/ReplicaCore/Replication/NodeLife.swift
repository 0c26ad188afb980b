import Foundation

/// This process's life as a node: its store's identity, the counter slot it writes, the epoch
/// its update sequences count in (from 1), when it started, and the highest timestamp stored
/// then (versions this node wrote at or before it are writes of earlier runs, which `leave`
/// must also see handed over).
struct NodeLife: Sendable {
    let identity: StoreIdentity
    let counterSlotOwner: UUID
    let epoch: UInt64
    let started: MonotonicInstant
    let timestampAtStart: HybridTimestamp
}
