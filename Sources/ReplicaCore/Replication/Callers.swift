import Foundation

/// The program's parties a replica answers after the fact: its change observers (by id), and
/// every `leave()` caller waiting for the departure (a second call joins the first), each
/// resumed once.
struct Callers {
    var observers: [UUID: Replica.Observer] = [:]
    var leaveWaiters: [CheckedContinuation<Departure, Never>] = []
}
