import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waits for SIGINT or SIGTERM. The first one is delivered for a graceful shutdown; a second
/// one exits at once (status 130), for an operator who does not want to wait.
enum SignalWaiter {
    static func waitForTermination() async -> Int32 {
        await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "signals")
            var sources: [DispatchSourceSignal] = []
            nonisolated(unsafe) var received = false
            for signal in [SIGINT, SIGTERM] {
                Glibc.signal(signal, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
                source.setEventHandler {
                    if received { exit(130) }
                    received = true
                    continuation.resume(returning: signal)
                }
                source.resume()
                sources.append(source)
            }
            Self.keepAlive(sources)
        }
    }

    nonisolated(unsafe) private static var retained: [DispatchSourceSignal] = []
    private static func keepAlive(_ sources: [DispatchSourceSignal]) { retained = sources }
}
