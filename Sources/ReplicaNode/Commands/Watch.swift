import ArgumentParser
import Foundation
import ReplicaCore

struct Watch: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Stream changes as the node applies them: registers, counters and logs.",
        discussion: """
            One line per change, local or received from a peer, with the time it was written, \
            where it came from and its version: a register by key (greeting = "hi"), a counter \
            by name with the change and the new total (visits +1 = 6), a log element as added, \
            changed or removed (drinks: added Mocha 90 mg at ...). PREFIX selects the keys, \
            counter names and log names it starts. With --json, one object per line: \
            {"type": "register", "key", "value", "encoding"} (or "removed": true), \
            {"type": "counter", "name", "delta", "total"} or {"type": "log", "log", "id", \
            "action", "element"}, each with "origin" ("local" or the peer it came from), \
            "version", "time", "hlc" and "node" (the writer). Runs until Ctrl-C; exits with 1, \
            saying why, when the watch ends: the node stops or restarts, or the watch read too \
            slowly and changes were lost. A node that does not answer the watch's check \
            (it is frozen or overloaded) is reported on stderr, and again when it answers.

            Examples:
              replica-node watch --data cluster-data/node2
              replica-node watch config. --json --data cluster-data/node2
            """)

    @Argument(help: "Only keys, counters and logs whose name starts with this.") var prefix = ""
    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        var client = client
        // A closed connection is not the end here: the node may be restarting (see below).
        client.endsWhenDisconnected = false
        try client.send(.watch(prefix: prefix))
        guard let first = try client.receive(timeout: .seconds(5)) else {
            throw ControlClient.Unreachable(message: "the node did not accept the watch within 5 s")
        }
        guard first.watching != nil else { throw ControlClient.UnexpectedReply(reply: first) }
        Output.note("watching \(prefix.isEmpty ? "everything" : "what starts with \(prefix)") on \(client.dataDirectory.path) (Ctrl-C to stop)")
        // After a quiet while the watch asks the node whether it still has the watch: a node
        // restarted meanwhile listens again, but knows nothing of it. Nodes that predate the
        // question answer it as a malformed request; then only the listening is checked.
        var checkSent = false
        var nodeChecksWatches = true
        // A check left unanswered: the node is frozen (SIGSTOP, a debugger) or overloaded. Said
        // once on stderr, and again when it answers: the watch itself goes on, as the node may
        // come back with the watch in place (a stopped node kept a watch silent).
        var checkSentAt: ContinuousClock.Instant?
        var saidUnanswered = false
        while true {
            let reply: ControlReply?
            do {
                reply = try client.receive(timeout: Self.quietPeriod)
            } catch let failure as ControlFailure {
                if checkSent, nodeChecksWatches, failure.isMalformedRequest {
                    nodeChecksWatches = false
                    checkSent = false
                    checkSentAt = nil
                    continue
                }
                // The node ended the watch, saying why (it stops, the watch lost changes, or it
                // restarted and no longer has it).
                throw WatchEnded(message: failure.message)
            }
            guard let reply else {
                // Quiet for a while: make sure the node, and the watch, are still there. A node
                // that is stopping removes its socket file before it tells its watches why they
                // end: that last word is waited for briefly.
                guard client.nodeIsListening else {
                    do {
                        _ = try client.receive(timeout: .milliseconds(500))
                    } catch let failure as ControlFailure {
                        throw WatchEnded(message: failure.message)
                    }
                    throw WatchEnded(message: "the watch ended: the node stopped")
                }
                if nodeChecksWatches && !checkSent {
                    try client.send(.watchCheck)
                    checkSent = true
                    checkSentAt = .now
                } else if let sentAt = checkSentAt, !saidUnanswered, ContinuousClock.now - sentAt >= Self.unansweredLimit {
                    saidUnanswered = true
                    Output.note("the node has not answered for \(Self.unansweredLimit) (stopped, or overloaded?); still watching")
                }
                continue
            }
            if saidUnanswered {
                saidUnanswered = false
                Output.note("the node answers again")
            }
            if reply.watching != nil {
                checkSent = false  // the node still has the watch
                checkSentAt = nil
                continue
            }
            guard let change = reply.change else { throw ControlClient.UnexpectedReply(reply: reply) }
            if options.json { Output.json(ChangeOutput.json(change)) } else { Output.line(ChangeOutput.text(change)) }
            // One line per change, even into a pipe; a watch whose output fails ends, saying
            // so (it went on silently, dropping every change).
            try Output.checkWritten()
        }
    }

    /// How long without a message before the watch checks that the node still has it.
    static let quietPeriod: Duration = .seconds(2)
    /// How long a check may go unanswered before the watch says so.
    static let unansweredLimit: Duration = .seconds(5)

    /// The watch is over: exit 1 with the reason.
    struct WatchEnded: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

/// A watched change in the user's terms.
enum ChangeOutput {
    /// `2026-11-22T14:13:04.545Z  visits +1 = 6  (from node2, version 1795374264545.0@node2)`
    static func text(_ change: WatchedChange) -> String {
        let what: String
        let value = { (payload: Data) in TextLine.oneLine(json: EntryOutput.text(payload)) }
        switch change.subject {
        case .register(let key, let payload):
            let key = TextLine.visible(key)
            what = payload.map { "\(key) = \(value($0))" } ?? "\(key) removed"
        case .counter(let name, let delta, let total):
            what = "\(TextLine.visible(name)) \(delta >= 0 ? "+" : "")\(delta) = \(total)"
        case .log(let name, let id, let action, let element, let drink):
            let id = TextLine.visible(id)
            let shown = drink.map(DrinkOutput.summary) ?? element.map { "\(id) = \(value($0))" } ?? id
            what = "\(TextLine.visible(name)): \(action.rawValue) \(shown)"
        }
        let origin = change.deliveredBy.map { "from \($0)" } ?? "local"
        return "\(EntryOutput.time(of: change.version))  \(what)  (\(origin), version \(change.version))"
    }

    static func json(_ change: WatchedChange) -> [UInt8] {
        var object = JSONObjectWriter()
        switch change.subject {
        case .register(let key, let value):
            object.field("type", "register")
            object.field("key", key)
            EntryOutput.addValue(value, to: &object)
        case .counter(let name, let delta, let total):
            object.field("type", "counter")
            object.field("name", name)
            object.field("delta", delta)
            object.field("total", total)
        case .log(let name, let id, let action, let element, let drink):
            object.field("type", "log")
            object.field("log", name)
            object.field("id", id)
            object.field("action", action.rawValue)
            if let drink {
                object.field("element", json: DrinkOutput.json(drink))
                object.field("encoding", "json")
            } else if let element {
                EntryOutput.addValue(element, named: "element", to: &object)
            }
        }
        object.field("origin", change.deliveredBy ?? "local")
        EntryOutput.addVersion(change.version, to: &object)
        return object.closed
    }
}
