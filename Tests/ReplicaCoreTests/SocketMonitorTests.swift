import CZMQ
import Foundation
import Testing
@testable import ReplicaCore

/// Monitored sockets opened and closed, in either order of their two ends, leave the context
/// working. A reading end closed while its monitor still runs leaves libzmq's end of the monitor
/// unable to write, and the next event blocks the context's I/O thread for good
/// (zeromq/libzmq#3575); `ZMQSocket.close()` stops the monitor first, on either end. It once
/// tried to while the handle it needed was already cleared, so the monitor never stopped: the
/// 300-round test then hung about one run in three under load, with the I/O thread blocked in
/// `monitor_event` on a pipe waiting for its delimiter (seen with a debug build of libzmq 4.3.4).
@Suite struct SocketMonitorTests {
    /// Waits (at most 5 s) for `event` on a monitor's reading end.
    static func wait(for event: ZMQSocket.MonitorEvent, on monitor: ZMQSocket) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            guard try monitor.waitUntilReadable(timeout: deadline - .now) else { return false }
            while let received = try monitor.receiveMonitorEvent() {
                if received == event { return true }
            }
        }
        return false
    }

    /// Whether a new PUB/SUB pair of `context` delivers a message within 5 s: the I/O thread works.
    static func delivers(in context: ZMQContext) throws -> Bool {
        let port = testPorts.pair()
        let publisher = try context.socket(.pub)
        try publisher.bind("tcp://127.0.0.1:\(port)")
        let subscriber = try context.socket(.sub)
        try subscriber.subscribe()
        try subscriber.connect("tcp://127.0.0.1:\(port)")
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            _ = try publisher.send(frame: Array("ping".utf8))
            if try subscriber.waitUntilReadable(timeout: .milliseconds(50)), try subscriber.receive() != nil { return true }
        }
        return false
    }

    /// Sockets opened, monitored and closed in a row, in both closing orders, as links are when
    /// members come and go: every monitor starts (its endpoint was once named after the socket's
    /// address, and a new socket at a closed one's address was refused, `EADDRINUSE`), and the
    /// context still delivers after 300 of them.
    @Test func monitorsOfSocketsOpenedAndClosedInARowAllStartAndNoneBlocks() throws {
        let context = try ZMQContext()
        for round in 0..<300 {
            let port = testPorts.pair()
            let publisher = try context.socket(.pub)
            try publisher.bind("tcp://127.0.0.1:\(port)")
            let subscriber = try context.socket(.sub)
            let events = try subscriber.monitor([.connected, .handshakeSucceeded, .disconnected])
            try subscriber.connect("tcp://127.0.0.1:\(port)")
            _ = try Self.wait(for: .handshakeSucceeded, on: events)
            if round.isMultiple(of: 2) {
                publisher.close()
                subscriber.close()
                events.close()
            } else {
                subscriber.close()
                events.close()
                publisher.close()
            }
        }
        #expect(try Self.delivers(in: context))
    }

    /// Closing a monitored socket stops its monitor before the socket goes: libzmq sends its
    /// "monitor stopped" event then, inside `close()`, so the reading end holds it as soon as
    /// `close()` returns. (libzmq also stops a monitor when it finally destroys the socket, on
    /// its reaper thread, later: too late, since events of the closing connections come first.)
    @Test func closingAMonitoredSocketStopsItsMonitorFirst() throws {
        let context = try ZMQContext()
        let port = testPorts.pair()
        let publisher = try context.socket(.pub)
        try publisher.bind("tcp://127.0.0.1:\(port)")
        let subscriber = try context.socket(.sub)
        let events = try subscriber.monitor([.handshakeSucceeded, .other(ZMQ_EVENT_MONITOR_STOPPED)])
        try subscriber.connect("tcp://127.0.0.1:\(port)")
        #expect(try Self.wait(for: .handshakeSucceeded, on: events))
        subscriber.close()
        var received: [ZMQSocket.MonitorEvent] = []
        while try events.waitUntilReadable(timeout: .zero), let event = try events.receiveMonitorEvent() { received.append(event) }
        #expect(received.contains(.other(ZMQ_EVENT_MONITOR_STOPPED)), "stopped within close(): \(received)")
        events.close()
        publisher.close()
    }

    @Test(arguments: ["reading end first", "monitored socket first"])
    func closingAMonitorNeverSilencesTheContext(order: String) throws {
        let context = try ZMQContext()
        let port = testPorts.pair()
        let publisher = try context.socket(.pub)
        try publisher.bind("tcp://127.0.0.1:\(port)")
        let subscriber = try context.socket(.sub)
        let events = try subscriber.monitor([.handshakeSucceeded, .disconnected])
        try subscriber.connect("tcp://127.0.0.1:\(port)")
        #expect(try Self.wait(for: .handshakeSucceeded, on: events))
        if order == "reading end first" {
            events.close()
            publisher.close()  // the subscriber's connection ends: `disconnected`, for nobody to read
        } else {
            subscriber.close()  // ends its connection: `disconnected`, reported in libzmq's threads
            events.close()
        }
        #expect(try Self.delivers(in: context), "the context's I/O thread still runs")
    }
}
