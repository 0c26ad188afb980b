import Foundation

/// The member table of one node, and the rules by which gossip changes it.
///
/// Records arrive from a join (a seed's reply), from membership exchanges between members whose
/// tables differ (heartbeats carry a digest of each table), and from announcements on PUB. A
/// record that supersedes what the table holds (see `MemberRecord.supersedes`) replaces it and is
/// announced on, so every member learns it in a round or two; one that does not changes nothing,
/// so gossip stops by itself. Merging is commutative, associative and idempotent: tables that
/// saw the same records, in any order, are equal (and so are their digests). Departures past the
/// retention are the exception: one received before a stale active record does not stop it (a
/// node away longer than the retention may bring a departed member back, as for deleted keys).
///
/// Records are claims, and a claim is taken only within what its source can back (see
/// docs/security.md): an epoch later than the wall clock plus `epochAllowance` is refused (it
/// would beat every later life, and leave no room to re-assert above it); a record that would
/// end or move a member this node hears directly (a departure, another address or key) is held
/// back unless that member sent it itself, and is taken once the member falls silent (a restart
/// elsewhere stops the old process first); a restart in place ends nothing and is taken from
/// anyone; the table holds at most `activeCapacity` active members and `recordCapacity` records
/// in all.
struct Membership: Sendable {
    /// This node's own record (written by this node alone).
    private(set) var local: MemberRecord
    /// Every other node learnt, `left` and `forgotten` ones included (as tombstones, so that
    /// gossip from a member that has not heard of the removal cannot bring them back) for the
    /// retention after their departure.
    private(set) var others: [NodeID: MemberRecord] = [:]
    /// A hash of the whole table; equal on two nodes means equal tables.
    private(set) var digest: UInt64 = 0
    /// How long (ms) a departure (a `left` or `forgotten` record, whose epoch is when it was
    /// written) is kept: `ReplicaConfiguration.tombstoneRetention`, the rule for removed keys too.
    let departureRetention: UInt64
    /// When the oldest departure held expires (wall ms), nil when none is held: the loop compares
    /// one number per turn instead of walking a table of thousands.
    private(set) var nextExpiry: UInt64?
    /// How far (ms) a record's epoch may lie ahead of the wall clock. Generous (the node sets a
    /// year, or the clock drift limit if longer): a member whose clock is days ahead still
    /// joins, to be listed for its clock rather than be unknown. What it rules out is an epoch
    /// so late that no later life, and no re-assertion, fits above it before 2^48 - 1.
    let epochAllowance: UInt64
    static let yearMillis: UInt64 = 365 * 86_400_000
    /// Most active members besides this node (a heartbeat reports at most `maxMembers`).
    let activeCapacity: Int
    /// Most records of other nodes, departures included.
    let recordCapacity: Int
    /// Records held back because they would end or move a member heard directly, by member:
    /// taken once it falls silent (`releaseHeld`), dropped after `holdTime`.
    private(set) var held: [NodeID: Held] = [:]
    struct Held: Equatable, Sendable {
        var record: MemberRecord
        /// Wall ms when it was first held.
        var since: UInt64
    }
    /// How long (ms) a held record waits for its member to fall silent.
    static let holdTime: UInt64 = 60_000
    /// Members ended or moved on another member's word (not their own), by member: their last
    /// own address is asked to join (as a seed) until they answer, are heard, or `probeLife`
    /// is over. A live member that sees such a record of itself re-asserts, so a departure
    /// forged or relayed while a partition hid the member does not outlive the partition.
    private(set) var probes: [NodeID: Probe] = [:]
    struct Probe: Equatable, Sendable {
        /// The member's last record before the one taken on hearsay.
        var record: MemberRecord
        var since: UInt64
        var next: UInt64
        var interval: UInt64
    }
    static let probeLife: UInt64 = 3_600_000
    static let firstProbeInterval: UInt64 = 2_000
    static let maxProbeInterval: UInt64 = 60_000
    static let maxProbes = 16

    init(local: MemberRecord, departureRetention: UInt64 = .max, epochAllowance: UInt64 = .max,
         activeCapacity: Int = WireLimits.standard.maxMembers - 1, recordCapacity: Int = 8 * WireLimits.standard.maxMembers) {
        self.local = local
        self.departureRetention = departureRetention
        self.epochAllowance = epochAllowance
        self.activeCapacity = activeCapacity
        self.recordCapacity = recordCapacity
        digest = computeDigest()
    }

    /// What a merge changed, for the node to act on (dial, hang up, log).
    enum Change: Equatable, Sendable {
        /// A member to dial: new, or a new life of one that had left.
        case joined(MemberRecord)
        /// A member restarted (new epoch) at the same address with the same key.
        case restarted(MemberRecord)
        /// A member now at another address or with another key: hang up and dial anew.
        case moved(MemberRecord)
        /// A member announced its departure.
        case left(MemberRecord)
        /// An operator removed a member.
        case forgotten(MemberRecord)
        /// A departure past the retention: the member's record (as it was held) is gone from the
        /// table.
        case expired(MemberRecord)
    }

    struct MergeResult: Equatable, Sendable {
        var changes: [Change] = []
        /// Records that changed this table: to be announced to the other members.
        var announce: [MemberRecord] = []
        /// Someone holds a record of this node that would replace our own (another process with
        /// our id, or an operator's `forget`): we re-assert ourselves with a later epoch. The
        /// record that would have replaced ours (the last, if several did).
        var reassertedAgainst: MemberRecord?
        var reasserted: Bool { reassertedAgainst != nil }
        /// Records refused because their key is trusted here as another node's: a process
        /// holding that node's key announced itself under this id (see `merge`).
        var impersonations: [Impersonation] = []
        /// Records not taken, and why.
        var refused: [Refusal] = []
        /// Records held back (not taken yet) because they would replace the one of a member
        /// heard directly: taken once it falls silent, refused if it never does (`releaseHeld`).
        var held: [MemberRecord] = []
    }

    /// A record `merge` did not take.
    struct Refusal: Equatable, Sendable {
        var record: MemberRecord
        var reason: Reason

        enum Reason: String, Equatable, Sendable {
            /// Its epoch is later than the wall clock plus the allowance.
            case datedAhead = "dated ahead of the clock"
            /// It would end or move a member heard directly, that member did not send it, and it
            /// went on being heard for `holdTime`.
            case contested = "contradicted a member heard directly for a minute"
            /// A new member while the table is full.
            case tableFull = "the member table is full"
        }
    }

    /// Members to dial: active, not this node, by id. Kept (by `othersChanged`) rather than
    /// filtered on demand: the loop asks every turn, and members that left stay in `others` (a
    /// cluster that has seen a thousand made each turn sort a thousand).
    private(set) var active: [MemberRecord] = []

    /// Members to list in status: all but the forgotten.
    var listed: [MemberRecord] { others.values.filter { $0.status != .forgotten }.sorted { $0.node < $1.node } }

    /// Every record: this node's own, then the active members, then those that left or were
    /// forgotten. What a join reply or an exchange carries, in the order a joining node needs
    /// them (a table too large for one message is split: see `MembersMessage.split`).
    var allRecords: [MemberRecord] {
        [local] + others.values.sorted { ($0.status, $0.node) < ($1.status, $1.node) }
    }

    subscript(node: NodeID) -> MemberRecord? { node == local.node ? local : others[node] }

    /// A record refused by `merge`, and the node whose key it carries.
    struct Impersonation: Equatable, Sendable {
        var record: MemberRecord
        var keyOwner: NodeID
    }

    /// Merges gossip. `keyOwners` is the trust of a CURVE node (key to the id its trust file
    /// names): a record whose key this node trusts as *another* node's is refused, whoever
    /// passes it on. Only a process holding that other node's secret key can announce such a
    /// record; taken in, it replaced the real member's record here (members stopped dialling
    /// it) and, of this node's own id, it made this node refuse its writes as if its data
    /// directory ran twice (an outside tester). A key trusted for no one, or for
    /// the record's own id, is no evidence either way (a key being rotated) and merges as
    /// before; so does a departure or a forget (it only ends a membership, and a forget of a
    /// renamed node must reach the members that know its key under the new name).
    /// `expiryWallMillis`: the time by which departures expire here (nil: none does, this
    /// node's clock cannot say; by default `wallMillis`). `wallMillis` is the wall clock, for
    /// a re-assertion's epoch.
    ///
    /// `sender` is the member the records provably come from (nil: nothing proves it), and
    /// `heardDirectly` the members heard on their own connections now: a record that would end
    /// or move one of them is taken from that member alone (see the type's comment).
    mutating func merge(_ records: [MemberRecord], wallMillis: UInt64, expiryWallMillis: UInt64?? = nil,
                        keyOwners: [[UInt8]: NodeID] = [:], sender: NodeID? = nil, heardDirectly: Set<NodeID> = []) -> MergeResult {
        let expiry = expiryWallMillis ?? wallMillis
        var result = MergeResult()
        var changed = false
        for record in records {
            if record.epoch > wallMillis.addingSaturated(epochAllowance) {
                result.refused.append(Refusal(record: record, reason: .datedAhead))
                continue
            }
            if record.status == .active, let key = record.publicKey, let owner = keyOwners[key], owner != record.node {
                result.impersonations.append(Impersonation(record: record, keyOwner: owner))
                continue
            }
            if record.node == local.node {
                // Only this node writes its own record. A record of it that would win (an
                // operator's forget or a stale leave reaching a live node, or an older copy of
                // this id at a later epoch) is answered with a later epoch of our own, within
                // the epochs the wire carries.
                if record.supersedes(local) && local.status == .active {
                    local.epoch = min(max(record.epoch.addingSaturated(1), wallMillis), WireLimits.maxEpoch)
                    result.reassertedAgainst = record
                    result.announce.append(local)
                    changed = true
                }
                continue
            }
            if let expiry, isExpired(record, wallMillis: expiry) {
                // Not kept, so a member that has not expired it yet cannot hand it back; but it
                // still ends the older record it replaces (a member that missed the departure).
                if let existing = others[record.node], record.supersedes(existing) {
                    others[record.node] = nil
                    changed = true
                    result.changes.append(.expired(existing))
                }
                continue
            }
            guard let existing = others[record.node] else {
                let full = record.status == .active ? active.count + pendingActive(in: result) >= activeCapacity : others.count >= recordCapacity
                if full {
                    result.refused.append(Refusal(record: record, reason: .tableFull))
                    continue
                }
                changed = true
                others[record.node] = record
                result.announce.append(record)
                switch record.status {
                case .active: result.changes.append(.joined(record))
                case .left: result.changes.append(.left(record))
                case .forgotten: result.changes.append(.forgotten(record))
                }
                continue
            }
            guard record.supersedes(existing) else { continue }
            let endsOrMoves = record.status != .active || record.address != existing.address || record.publicKey != existing.publicKey
            if existing.status == .active, heardDirectly.contains(record.node), sender != record.node, endsOrMoves {
                if held[record.node].map({ record.supersedes($0.record) }) ?? true {
                    held[record.node] = Held(record: record, since: held[record.node]?.since ?? wallMillis)
                }
                result.held.append(record)
                continue
            }
            if sender == record.node || !endsOrMoves {
                probes[record.node] = nil
            } else if existing.status == .active, probes[record.node] == nil {
                startProbe(of: existing, wallMillis: wallMillis)
            }
            changed = true
            others[record.node] = record
            result.announce.append(record)
            switch record.status {
            case .active where existing.status != .active:
                result.changes.append(.joined(record))
            case .active where existing.address != record.address || existing.publicKey != record.publicKey:
                result.changes.append(.moved(record))
            case .active:
                result.changes.append(.restarted(record))
            case .left:
                result.changes.append(.left(record))
            case .forgotten:
                result.changes.append(.forgotten(record))
            }
        }
        if changed { othersChanged() }
        return result
    }

    /// New active members this merge added so far (`active` is rebuilt once, at its end).
    private func pendingActive(in result: MergeResult) -> Int {
        result.changes.count { if case .joined = $0 { true } else { false } }
    }

    /// Takes the held records of members no longer heard directly (their old process fell
    /// silent: the record may well be their own, a restart elsewhere). A held record the table
    /// has caught up with (the member's own copy arrived, as a departure's announcement does
    /// after its copy on ROUTER) is dropped quietly; one held longer than `holdTime` is refused.
    mutating func releaseHeld(heardDirectly: Set<NodeID>, wallMillis: UInt64, expiryWallMillis: UInt64?? = nil,
                              keyOwners: [[UInt8]: NodeID] = [:]) -> MergeResult? {
        guard !held.isEmpty else { return nil }
        var result = MergeResult()
        for (node, hold) in held.sorted(by: { $0.key < $1.key }) {
            if let current = others[node], !hold.record.supersedes(current) {
                held[node] = nil
            } else if wallMillis.subtractingSaturated(hold.since) >= Self.holdTime {
                held[node] = nil
                result.refused.append(Refusal(record: hold.record, reason: .contested))
            }
        }
        let released = held.filter { !heardDirectly.contains($0.key) }
        for node in released.keys { held[node] = nil }
        if !released.isEmpty {
            let taken = merge(released.values.map(\.record).sorted { $0.node < $1.node }, wallMillis: wallMillis,
                              expiryWallMillis: expiryWallMillis, keyOwners: keyOwners, heardDirectly: heardDirectly)
            result.changes += taken.changes
            result.announce += taken.announce
            result.refused += taken.refused
            result.impersonations += taken.impersonations
        }
        return result.changes.isEmpty && result.refused.isEmpty && result.impersonations.isEmpty ? nil : result
    }

    private mutating func startProbe(of record: MemberRecord, wallMillis: UInt64) {
        if probes.count >= Self.maxProbes, let oldest = probes.min(by: { ($0.value.since, $0.key) < ($1.value.since, $1.key) }) {
            probes[oldest.key] = nil
        }
        probes[record.node] = Probe(record: record, since: wallMillis, next: wallMillis, interval: Self.firstProbeInterval)
    }

    /// The last own records of the members to ask now (`probes`), each then due again after
    /// twice as long, up to `maxProbeInterval`. Probes end for members heard directly, gone from
    /// the table, active again at their own address, or past `probeLife`.
    mutating func dueProbes(wallMillis: UInt64, heardDirectly: Set<NodeID>) -> [MemberRecord] {
        guard !probes.isEmpty else { return [] }
        var due: [MemberRecord] = []
        for (node, probe) in probes.sorted(by: { $0.key < $1.key }) {
            let current = others[node]
            let settled = current.map { $0.status == .active && $0.address == probe.record.address && $0.publicKey == probe.record.publicKey } ?? true
            if settled || heardDirectly.contains(node) || wallMillis.subtractingSaturated(probe.since) >= Self.probeLife {
                probes[node] = nil
            } else if wallMillis >= probe.next {
                due.append(probe.record)
                probes[node]?.next = wallMillis.addingSaturated(probe.interval)
                probes[node]?.interval = min(probe.interval * 2, Self.maxProbeInterval)
            }
        }
        return due
    }

    /// Whether `record` is a departure older than the retention.
    func isExpired(_ record: MemberRecord, wallMillis: UInt64) -> Bool {
        record.status != .active && record.epoch < wallMillis - min(wallMillis, departureRetention)
    }

    /// Removes the departures past the retention; returns them.
    mutating func expireDepartures(wallMillis: UInt64) -> [MemberRecord] {
        let expired = others.values.filter { isExpired($0, wallMillis: wallMillis) }
        guard !expired.isEmpty else { return [] }
        for record in expired { others[record.node] = nil }
        othersChanged()
        return expired.sorted { $0.node < $1.node }
    }

    /// Once per change of the table, not per record: a join of a thousand records is one pass.
    private mutating func othersChanged() {
        active = others.values.filter { $0.status == .active }.sorted { $0.node < $1.node }
        let oldestDeparture = others.values.lazy.filter { $0.status != .active }.map(\.epoch).min()
        // The first millisecond at which it is expired (`isExpired`: older than the retention).
        nextExpiry = oldestDeparture.map { epoch in
            let (end, overflow) = epoch.addingReportingOverflow(departureRetention)
            return overflow || end == .max ? .max : end + 1
        }
        digest = computeDigest()
    }

    /// This node leaves: its record says so, at the departure's time (`wallMillis`, or the
    /// record's epoch if that is later), so that it wins over this life's active record everywhere
    /// and expires a retention after the departure, not after the start.
    mutating func leave(wallMillis: UInt64) -> MemberRecord {
        local.status = .left
        local.epoch = max(local.epoch, wallMillis)
        digest = computeDigest()
        return local
    }

    /// Why a member cannot be forgotten.
    enum ForgetRefusal: Error, Equatable, Sendable {
        case isSelf
        case unknown
        case stillAlive
    }

    /// An operator removes member `node` from the cluster (it must not be alive: a live member
    /// would re-assert itself at once). Returns the tombstone to announce, dated `wallMillis`
    /// (or the record's epoch if later) like a departure.
    mutating func forget(_ node: NodeID, isAlive: Bool, wallMillis: UInt64) throws(ForgetRefusal) -> MemberRecord {
        guard node != local.node else { throw .isSelf }
        guard var record = others[node], record.status != .forgotten else { throw .unknown }
        guard !isAlive || record.status == .left else { throw .stillAlive }
        record.status = .forgotten
        record.epoch = max(record.epoch, wallMillis)
        others[node] = record
        othersChanged()
        return record
    }

    private func computeDigest() -> UInt64 {
        var hash = StableHash()
        for record in allRecords.sorted(by: { $0.node < $1.node }) {
            hash.combine(bytes: record.node.rawValue.utf8)
            hash.combine(0)
            hash.combine(record.epoch)
            hash.combine(UInt64(record.status.rawValue))
            hash.combine(bytes: record.address.description.utf8)
            hash.combine(0)
            hash.combine(bytes: record.publicKey ?? [])
            withUnsafeBytes(of: record.incarnation.uuid) { hash.combine(bytes: $0) }
        }
        return hash.finalized
    }
}
