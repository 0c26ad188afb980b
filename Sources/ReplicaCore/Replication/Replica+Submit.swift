import Foundation

/// Writes from callers that do not await: a thread of their own, a C callback, a producer that
/// must not create a task per write. The write goes into a locked inbox, the loop is woken, and
/// the next turn queues it for the group commit like any other.
extension Replica {
    /// Writes `batch` (all or none) without awaiting: `completion` runs on the replica's loop
    /// thread with the entries once they are durable, or with the error `write` would throw. It
    /// is called exactly once, and must be quick (it runs in the commit path). The replica stays
    /// alive while its loop runs (see `PollLoop.start`), so a caller need not keep a reference
    /// for the completion to come.
    public nonisolated func submit(_ batch: [WriteRequest], completion: @escaping @Sendable (Result<[Entry], any Error>) -> Void) {
        let wasEmpty = inbox.withLock { inbox in
            defer { inbox.writes.append(CommitQueue.PendingWrite(requests: batch, completion: .handler(completion))) }
            return inbox.writes.isEmpty
        }
        // One hand-over per burst: the loop takes the whole inbox when it runs this.
        if wasEmpty { loop.execute { [weak self] in self?.assumeIsolated { $0.takeSubmissions() } } }
    }

    /// Moves submitted writes into the commit queue, refusing (through their completion) those
    /// that `write` would refuse.
    func takeSubmissions() {
        let submitted = inbox.withLock { inbox in
            defer { inbox.writes.removeAll(keepingCapacity: true) }
            return inbox.writes
        }
        for write in submitted {
            do {
                try validate(write.requests, refusingNewerSchemaThan: nil)
                if write.requests.isEmpty {
                    write.completion.resume(returning: [])
                } else {
                    core.commits.enqueue(write)
                }
            } catch {
                write.completion.resume(throwing: error)
            }
        }
    }
}
