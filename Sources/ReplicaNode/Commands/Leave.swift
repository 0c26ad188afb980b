import ArgumentParser
import Foundation
import ReplicaCore

struct Leave: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Take a node out of the cluster for good, then stop it.",
        discussion: """
            The node first hands its writes over: it refuses new writes and waits (at most \
            10 s) until every member alive reports holding every update it published, which \
            they repair meanwhile if they lack some; if its store holds writes of an earlier \
            run (it restarted since), a member confirms only once its digest equals this \
            node's. Then it announces its departure, waits (at most 2 s) for the members' \
            acknowledgements, and stops: leave returns once the node has let its data \
            directory go and its process has ended (at most 10 s more). Every member then \
            lists it as left and no longer dials it. Started again later, with the same id, \
            it joins as a new life.

            If no member confirms holding its writes in time (none alive, or none reachable), \
            the node does not leave: it stays a member, keeps running and accepts writes \
            again, and leave exits 1 saying so; run it again once members are reachable, or \
            with --force to leave anyway (its writes then stay only in its data directory). \
            Members that did not confirm while others did get the writes from those.

            To remove a node that is already dead, run `forget` on any member instead.

            Example (add --force to leave even if no member confirms):
              replica-node leave --data cluster-data/node3
            """)

    @OptionGroup var options: ClientOptions

    @Flag(help: "Leave even if no member confirms holding this node's writes.")
    var force = false

    func perform(with client: ControlClient) throws {
        var client = client
        client.timeout = .seconds(30)  // the hand-off (10 s) and the acknowledgements (2 s)
        // The node's process, to see it end after it left.
        let nodePID = client.nodePID
        let departure: Departure
        do {
            departure = try client.call(.leave(force: force), expecting: \.left)
        } catch let unreadable as ControlClient.UnreadableReply {
            // A node of another version answered in a form this client cannot read. Whether it
            // left shows all the same: a node that left stops, one that stayed keeps serving.
            guard Self.stops(client, within: Self.stopWait) else { throw unreadable }
            let text = "OK left the cluster; the node stopped (it runs another version of replica-node, whose reply "
                + "this client cannot read in full: \(unreadable.reason))"
            if options.json {
                var object = JSONObjectWriter()
                object.field("left", true)
                Output.json(object.closed)
                Output.error(text)
            } else {
                Output.line(text)
            }
            return
        }
        // The node stops right after its reply: wait until it has, so that whatever runs next
        // (a restart, a copy, a removal) finds it stopped. (An outside tester's node still ran a
        // second after `leave` had said "the node stops".)
        var stopped = "the node stopped"
        if departure.left {
            switch Self.waitForStop(client, pid: nodePID, within: Self.stopWait) {
            case .stopped: break
            case .storeClosed(let pid):
                stopped = "the node closed its store (process \(pid) is still ending)"
            case .notSeen:
                stopped = "the node stops"
                Output.warning("the node left the cluster but was still serving \(client.dataDirectory.path) "
                    + "\(Self.stopWait) later; it stops once its last commit and sockets are closed (its log says when)")
            }
        }
        if options.json {
            // The fields say it all; the reason goes to stderr as well, for whoever reads it.
            try Output.json(encoding: departure)
            if !departure.left { Output.error(Self.notLeft(departure)) }
        } else if departure.left {
            Output.line("OK left the cluster; \(Self.handOff(departure)); \(stopped)")
            if departure.holding.isEmpty && (departure.published > 0 || departure.earlierWrites) {
                Output.warning("no member confirmed holding \(departure.writesText): "
                    + "what no member had is only in \(options.dataPath ?? "its data directory") now")
            }
        } else {
            Output.error(Self.notLeft(departure))
        }
        if !departure.left { throw ExitCode.failure }
    }

    /// How long a node whose reply could not be read is given to stop (it stops right after it
    /// answers, if it left).
    static let stopWait: Duration = .seconds(10)

    /// How far a node that left was seen to stop.
    enum StopSeen: Equatable {
        /// Its data directory is free and its process (if its id was known) has ended.
        case stopped
        /// Its data directory is free (another node may start on it); its process is still ending.
        case storeClosed(pid: Int32)
        /// Still holding the directory, or serving its control socket where the lock cannot be
        /// told (another user's), when `limit` ran out.
        case notSeen
    }

    /// Waits (checking every 50 ms, at most `limit`) until the node has let its data directory
    /// go, then until its process `pid` has ended. The lock is probed without being taken;
    /// where it cannot be (another user's lock file), the control socket going away stands in.
    static func waitForStop(_ client: ControlClient, pid: Int32?, within limit: Duration) -> StopSeen {
        waitForStop(directory: client.dataDirectory, pid: pid, within: limit) { stops(client, within: $0) }
    }

    /// The wait of `waitForStop(_:pid:within:)` on `directory`; `stopsServing` stands in where
    /// the lock cannot be probed (a node's control socket going away within the duration).
    static func waitForStop(
        directory: URL, pid: Int32?, within limit: Duration, stopsServing: (Duration) -> Bool
    ) -> StopSeen {
        let deadline = ContinuousClock.now + limit
        func waits(until done: () -> Bool) -> Bool {
            while !done() {
                guard ContinuousClock.now < deadline else { return false }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return true
        }
        if DataDirectoryLock.probe(directory: directory) == .unknown {
            return stopsServing(limit) ? .stopped : .notSeen
        }
        guard waits(until: { DataDirectoryLock.probe(directory: directory) == .free }) else { return .notSeen }
        // Process 1 is the node itself run as a container's first process, with this command
        // in the same container (`docker compose exec`): when it ends, the kernel ends every
        // process of the container, this one too, before it could say anything. Its store is
        // closed: that is what matters, and what is said at once.
        guard let pid, pid > 1, pid != getpid() else { return .stopped }
        return waits(until: { hasEnded(pid) }) ? .stopped : .storeClosed(pid: pid)
    }

    /// Whether process `pid` has ended: gone, or a zombie its parent has not reaped yet (a
    /// harness that waits for its children later; the fault tests' nodes waited 10 s for that).
    static func hasEnded(_ pid: Int32) -> Bool {
        if kill(pid, 0) != 0 && errno == ESRCH { return true }  // (EPERM: another user's, still there)
        // `/proc/PID/stat`: "PID (NAME) STATE ...", the name in any bytes, so read after its last ')'.
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let nameEnd = stat.lastIndex(of: UInt8(ascii: ")")) else { return false }
        let state = stat[stat.index(after: nameEnd)...].first { $0 != UInt8(ascii: " ") }
        return state == UInt8(ascii: "Z") || state == UInt8(ascii: "X")
    }

    /// Whether the node stops serving within `limit` (checked every 50 ms).
    static func stops(_ client: ControlClient, within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while client.nodeIsListening {
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }

    /// Why the node did not leave, and what to do.
    static func notLeft(_ departure: Departure) -> String {
        let asked = departure.asked.isEmpty
            ? "no member is alive"
            : "asked within 10 s: " + departure.asked.map(\.rawValue).joined(separator: ", ")
                + (departure.earlierWrites ? "; writes of earlier runs are confirmed by a digest equal to this node's" : "")
        return "not left: no member confirmed holding \(departure.writesText) (\(asked)). The node stays a "
            + "member, keeps running and accepts writes again. Check that members are up and reach it (status), then "
            + "run leave again; leave --force leaves anyway, its writes then only in its data directory"
    }

    /// "3 of 3 members hold its 12 update(s) and acknowledged", and who did not.
    static func handOff(_ departure: Departure) -> String {
        let total = departure.asked.count
        guard total > 0 else { return "no member was alive to hand over to" }
        let handedOver = departure.published > 0 || departure.earlierWrites
        var text = handedOver
            ? "\(departure.holding.count) of \(total) member(s) hold its "
                + [departure.published > 0 ? "\(departure.published) update(s)" : nil, departure.earlierWrites ? "writes of earlier runs" : nil]
                    .compactMap { $0 }.joined(separator: " and its ")
            : "it had written nothing the store still holds"
        if !departure.lacking.isEmpty, handedOver, !departure.holding.isEmpty {
            text += " (\(departure.lacking.map(\.rawValue).joined(separator: ", ")) did not confirm in time: they get them from the others)"
        }
        text += "; \(departure.acknowledged.count) of \(total) acknowledged"
        return text
    }
}
