/// Which members never heard directly hold a link (a SUB and a DEALER, with their descriptors).
///
/// A member record says where to dial, and anyone can send records (insecure, or a trusted
/// member under CURVE), for nodes that do not exist too: each dial costs descriptors. So at
/// most `limit` members not heard yet are dialled at once. One that stays unheard for `attempt` gives its place up and waits a back-off
/// (doubling from `firstBackOff` to `maxBackOff`) before it is dialled again; places go to those
/// waiting longest. A member heard once leaves this count for good (it is a real node; its link
/// is kept like any other member's), even when a record not its own replaced its session
/// (`heardOnce`).
struct UnheardDials: Sendable {
    let limit: Int
    let attempt: Duration
    let firstBackOff: Duration
    let maxBackOff: Duration

    /// Members dialled and not heard yet, since when.
    private(set) var dialling: [NodeID: MonotonicInstant] = [:]
    /// Members waiting for a place: when they may be dialled, and their next back-off.
    private(set) var waiting: [NodeID: Wait] = [:]
    /// Members heard directly (on their own connections) since this process started: real
    /// nodes, admitted at once whenever they are dialled again. Their sessions, which showed
    /// they were heard, may be gone meanwhile: a record not their own that ends or moves them
    /// (`forgotten` drops the session, `moved` and a return from `left` start its liveness
    /// over), and it must not come back as a stranger that waits behind every ghost a hostile
    /// member sent. Only a process that answers on the member's own connections gets here;
    /// dropped when its departure expires.
    private(set) var heardOnce: Set<NodeID> = []
    struct Wait: Equatable, Sendable {
        var until: MonotonicInstant
        var backOff: Duration
    }
    /// Times a member had to wait for a place (for status).
    private(set) var deferred = 0

    init(limit: Int = 32, attempt: Duration = .seconds(30), firstBackOff: Duration = .seconds(60), maxBackOff: Duration = .seconds(960)) {
        self.limit = limit
        self.attempt = attempt
        self.firstBackOff = firstBackOff
        self.maxBackOff = maxBackOff
    }

    enum Action: Equatable, Sendable {
        case open(NodeID)
        case close(NodeID)
    }

    /// A member never heard is to be dialled: true if it may be now (a place is free).
    mutating func admit(_ node: NodeID, now: MonotonicInstant) -> Bool {
        if dialling[node] != nil { return true }
        if heardOnce.contains(node) {
            waiting[node] = nil
            return true
        }
        if waiting[node] == nil, dialling.count < limit {
            dialling[node] = now
            return true
        }
        if waiting[node] == nil {
            waiting[node] = Wait(until: now, backOff: firstBackOff)
            deferred += 1
        }
        return false
    }

    /// Heard directly: a real member, no longer counted, now or when it is dialled again.
    mutating func heard(_ node: NodeID) {
        dialling[node] = nil
        waiting[node] = nil
        heardOnce.insert(node)
    }

    /// No longer a member to dial (it left, was forgotten, or its key is no longer trusted).
    /// Whether it was heard is kept: the departure may be another member's word, and the
    /// member's own record may bring it back.
    mutating func remove(_ node: NodeID) {
        dialling[node] = nil
        waiting[node] = nil
    }

    /// Its departure expired (the member is gone from the table): a stranger if it comes back.
    mutating func forget(_ node: NodeID) {
        remove(node)
        heardOnce.remove(node)
    }

    /// Links unheard for `attempt` are closed (their members wait a back-off); free places go to
    /// the members waiting longest whose back-off is over.
    mutating func tick(now: MonotonicInstant) -> [Action] {
        var actions: [Action] = []
        for node in dialling.filter({ now - $0.value >= attempt }).keys.sorted() {
            dialling[node] = nil
            let backOff = waiting[node]?.backOff ?? firstBackOff
            waiting[node] = Wait(until: now + backOff, backOff: min(backOff * 2, maxBackOff))
            actions.append(.close(node))
        }
        guard dialling.count < limit, !waiting.isEmpty else { return actions }
        let ready = waiting.filter { $0.value.until <= now && dialling[$0.key] == nil }
            .sorted { ($0.value.until, $0.key) < ($1.value.until, $1.key) }
        for (node, _) in ready.prefix(limit - dialling.count) {
            dialling[node] = now
            actions.append(.open(node))
        }
        return actions
    }
}
