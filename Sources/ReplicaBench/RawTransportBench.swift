import Foundation
import ReplicaCore

/// The physical limit: libzmq PUB -> SUB over TCP loopback, one frame of `payload` bytes,
/// sender and receiver on their own threads, no Replica code in the path.
enum RawTransportBench {
    static func run(messages: Int, payload: Int, curve: Bool) throws -> BenchReport.Throughput {
        let context = try ZMQContext(ioThreads: 1)
        let (publisher, subscriber) = try connectedPair(context, curve: curve)
        let body = [UInt8](repeating: 0x42, count: payload)
        let end: [UInt8] = [0xFF]
        let sender = Thread {
            do {
                for _ in 0..<messages { try publisher.send([body], wait: true) }
                try publisher.send([end], wait: true)
            } catch {
                // The receiver would wait for the end marker forever: stop with the reason.
                fatalError("raw transport bench: send failed: \(error)")
            }
        }
        let start = ContinuousClock.now
        sender.start()
        var received = 0
        while let message = try subscriber.receive(wait: true) {
            if message.frames.first == end { break }
            received += 1
        }
        let elapsed = ContinuousClock.now - start
        return BenchReport.Throughput(messages: received, seconds: elapsed / .seconds(1))
    }

    /// A PUB bound on loopback and a SUB connected to it, past the slow-joiner window.
    static func connectedPair(_ context: ZMQContext, curve: Bool) throws -> (publisher: ZMQSocket, subscriber: ZMQSocket) {
        let publisher = try context.socket(.pub)
        let subscriber = try context.socket(.sub)
        try publisher.setHighWaterMarks(send: 0, receive: 0)  // no drops: measure the pipe, not the HWM
        try subscriber.setHighWaterMarks(send: 0, receive: 0)
        if curve {
            let server = try CurveKeyPair.generate(), client = try CurveKeyPair.generate()
            try publisher.setCurveServer(server, zapDomain: nil)
            try subscriber.setCurveClient(client, serverKey: server.publicKey)
        }
        try publisher.bind("tcp://127.0.0.1:*")
        try subscriber.subscribe()
        try subscriber.connect(try publisher.lastEndpoint())
        // Wait out the slow-joiner window: probe until one probe arrives.
        while true {
            try publisher.send([[0]])
            if try subscriber.waitUntilReadable(timeout: .milliseconds(10)) { break }
        }
        while try subscriber.receive() != nil {}
        return (publisher, subscriber)
    }
}
