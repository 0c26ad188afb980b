import Foundation
import Testing
@testable import ReplicaCore

/// What a sync responder relies on to recognise a retried request: a ROUTER names each
/// connection anew. Replica's DEALERs set no routing id, so the ROUTER gives each connection
/// its own; one that reconnects (the same DEALER, dialled again) comes back under another, and
/// what was queued for the old one is not counted as on its way to the new one.
@Suite struct RouterConnectionTests {
    /// The routing id of the next message on `router`, within 5 s.
    static func routingID(on router: ZMQSocket) throws -> [UInt8]? {
        guard try router.waitUntilReadable(timeout: .seconds(5)), let message = try router.receive(maxFrames: 2) else { return nil }
        return message.frames.first
    }

    /// With a member link's own DEALER (its options as Replica sets them) and its re-dial.
    @Test func aReconnectionArrivesUnderANewRoutingID() throws {
        let context = try ZMQContext()
        let port = testPorts.pair()
        let member = Endpoint(host: "127.0.0.1", port: port)
        let router = try context.socket(.router)
        try router.bind(member.syncAddress)
        let link = try MemberLink(
            node: "m", address: member, from: Endpoint(host: "127.0.0.1", port: testPorts.pair()), context: context,
            limits: WireLimits(), security: .insecure)
        defer { link.close() }
        _ = try link.dealer.send(frame: [1], wait: true)
        _ = try link.dealer.send(frame: [2], wait: true)
        let first = try #require(try Self.routingID(on: router))
        #expect(try Self.routingID(on: router) == first, "two messages of one connection")

        try link.dealer.redial(link.syncAddress)
        _ = try link.dealer.send(frame: [3], wait: true)
        let after = try #require(try Self.routingID(on: router))
        #expect(after != first)
        router.close()
    }
}
