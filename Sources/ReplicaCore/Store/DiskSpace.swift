import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The space left on the file system holding a data directory: what an operator watches to act
/// before a full disk fails commits. (Small writes keep landing in the log's pages already
/// allocated long after a disk is full, and `health` stayed green on a disk at 100%;
/// since 0.32.0 a disk without `roomForCommits` is listed as a `commit` problem by itself.)
public struct DiskSpace: Sendable, Equatable, Codable {
    /// Bytes an unprivileged writer can still use (`f_bavail`: root's reserve excluded).
    public var freeBytes: UInt64
    public var totalBytes: UInt64

    /// The space of the file system at `path` (one `statvfs`); nil if it cannot be read.
    public static func of(_ path: String) -> DiskSpace? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let block = UInt64(info.f_frsize)
        return DiskSpace(freeBytes: UInt64(info.f_bavail) &* block, totalBytes: UInt64(info.f_blocks) &* block)
    }

    /// The space at `path`, measured on one serial queue of its own: a caller that awaits it
    /// is suspended, not a thread of the shared pool blocked (two stalled `statvfs` calls would
    /// take both threads of a 2-core machine's pool).
    public static func measure(_ path: String) async -> DiskSpace? {
        await withCheckedContinuation { continuation in
            measuring.async { continuation.resume(returning: of(path)) }
        }
    }

    private static let measuring = DispatchQueue(label: "replica.disk-space")

    /// Below this, `status` flags the space as low: under 5% of the file system, or under
    /// 256 MiB, but on a file system under 1 GiB only under a quarter of it (a small volume
    /// for a small store was flagged from the start).
    public var isLow: Bool { freeBytes < max(totalBytes / 20, min(256 << 20, totalBytes / 4)) }

    /// The free bytes a disk must have for the store's commits to be trusted (with less, the
    /// `commit` problem is listed, whether or not a commit failed yet): room for four of the
    /// largest messages (`frameBytes` each), what a fetch of dropped entries commits at once; on
    /// a volume under 16 of them, a quarter of it (a 4 MiB volume never has 4 MiB free). Judged
    /// on `freeBytes`, root's reserve excluded: a node running as root may go on committing into
    /// it, but the disk is then full for everything else.
    func roomForCommits(frameBytes: Int) -> UInt64 { min(UInt64(4 * frameBytes), totalBytes / 4) }

    /// The free bytes a disk that lacked `roomForCommits` (or whose commits failed) must have
    /// before the store is trusted again: half as much again. Without the margin, a disk whose
    /// free space hovered at the room listed and cleared the `commit` problem at every look, 2 s
    /// apart, an alert that flaps.
    func roomToRecover(frameBytes: Int) -> UInt64 {
        let room = roomForCommits(frameBytes: frameBytes)
        return room + room / 2
    }

    /// Whether the disk lacks the room for commits: less free than `roomForCommits`, or, when it
    /// lacked it already (`wasShort`), than `roomToRecover`.
    func lacksRoomForCommits(frameBytes: Int, wasShort: Bool) -> Bool {
        freeBytes < (wasShort ? roomToRecover(frameBytes: frameBytes) : roomForCommits(frameBytes: frameBytes))
    }
}

extension DiskSpace {
    /// The `commit` problem's words while the disk is short of space for commits of frames up
    /// to `frameBytes`.
    func shortOfSpaceMessage(frameBytes frame: Int) -> String {
        let (room, recover) = (roomForCommits(frameBytes: frame), roomToRecover(frameBytes: frame))
        // Between the two figures it is short still (`roomToRecover`), and says so truly.
        let short = freeBytes < room
            ? "fewer than the \(room) a large commit may need (a fetch of dropped entries, a large write): commits fail or soon "
                + "will, though small ones may still fit in SQLite's log"
            : "fewer than the \(recover) it needs to be trusted with commits again after it had fewer than \(room)"
        return "the disk has \(freeBytes) bytes free, \(short); free space (this clears once the disk has \(recover) bytes free)"
    }
}
