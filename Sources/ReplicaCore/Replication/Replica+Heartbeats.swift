import Foundation

/// Heartbeats: the core composes them (`NodeCore+Heartbeat.swift`); the actor reads the store's
/// digest and sends.
extension Replica {
    func publishHeartbeat(now: MonotonicInstant) {
        guard let publisher = sockets.publisher else { return }
        let heartbeat = core.heartbeat(
            identity: identity, epoch: epoch, now: now, wallMillis: configuration.wallClock(), base: timing,
            store: .init(digestRoot: store.digest.root, entryCount: UInt64(store.count), serial: store.serial))
        do {
            try publisher.send([codec.publishFrame(.heartbeat(heartbeat))])
        } catch {
            logger.error("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }
}
