import Synchronization

/// Whether a `changes(prefix:lost:)` stream has dropped a change: its reader fell so far behind
/// (65,536 undelivered changes, a burst of imports while it could not run) that the oldest went.
///
/// The stream's element type stays `Change`, so the loss cannot travel in it: a reader checks
/// `happened` after each change it takes and before it acts on it. Everything it acted on
/// before seeing the flag was contiguous; from there it must start over from the store (a
/// watch ends saying so, a shared key reloads), since the changes dropped are not coming back.
public final class ChangeLoss: Sendable {
    private let dropped = Atomic<Bool>(false)

    public init() {}

    /// A change was dropped from the stream.
    public var happened: Bool { dropped.load(ordering: .acquiring) }

    func record() { dropped.store(true, ordering: .releasing) }
}
