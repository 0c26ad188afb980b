import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a clean stop leaves beside the database file (`clean-stop`): a nonce, also committed to
/// the store's `meta` as the stop's last commit, and the database file's change time and size
/// once the stop's last write to it is done.
///
/// The next run keeps its counter slots only if both still hold (`SQLiteStore.beginRun`). The
/// nonce in the store shows that the store holds the stop's last commit, so every commit
/// before it (a power loss that lost it, or a copy of a running node, holds another). The change
/// time shows that the file is the one that stopped: `cp -a`, `tar` and `rsync` give what they
/// write a new one, whether in place or as a new file (which on ext4 may get the old inode
/// back, so the inode proves nothing). A record lost or torn costs only a new slot.
struct CleanStopRecord: Equatable, Sendable {
    static let fileName = "clean-stop"

    var nonce: String
    var changeSeconds: Int
    var changeNanoseconds: Int
    var size: Int64

    /// The record for the database file at `path` as it is now; nil if it cannot be read.
    init?(nonce: String, databaseAt path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.nonce = nonce
        changeSeconds = info.st_ctim.tv_sec
        changeNanoseconds = info.st_ctim.tv_nsec
        size = Int64(info.st_size)
    }

    init?(text: String) {
        let fields = text.split(separator: " ")
        guard fields.count == 4, let seconds = Int(fields[1]), let nanoseconds = Int(fields[2]), let size = Int64(fields[3]) else {
            return nil
        }
        nonce = String(fields[0])
        changeSeconds = seconds
        changeNanoseconds = nanoseconds
        self.size = size
    }

    var text: String { "\(nonce) \(changeSeconds) \(changeNanoseconds) \(size)\n" }

    /// Whether the database file at `path` is still, unchanged, the file this record was made for.
    func describes(databaseAt path: String) -> Bool {
        CleanStopRecord(nonce: nonce, databaseAt: path) == self
    }

    /// Reads the record in `directory`, if there is one to read.
    static func read(in directory: URL) -> CleanStopRecord? {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(fileName).path) else { return nil }
        return CleanStopRecord(text: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Removes the record in `directory`: it speaks for the start that read it and for no later
    /// one. Removed once that start has committed "run under way", so a start refused before
    /// (another node's directory) leaves it for the right one; a record left behind (removal
    /// failed, or a crash came first) names a nonce the store no longer holds.
    static func remove(in directory: URL) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(fileName))
    }

    func write(in directory: URL) throws {
        try Data(text.utf8).write(to: directory.appendingPathComponent(Self.fileName), options: .atomic)
    }
}
