/// What other threads hand a replica's loop, under the replica's one lock: writes submitted
/// without awaiting (`submit`), until the loop takes them, and the last ticket given to a
/// shared key's load error or refused save (`problemTicket`).
struct Inbox {
    var writes: [CommitQueue.PendingWrite] = []
    var lastProblemTicket: UInt64 = 0
}
