import CSpawnActions
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file actions of one `posix_spawn`: what the child's descriptors are before it runs.
struct SpawnFileActions {
    #if canImport(Darwin)
    var raw: posix_spawn_file_actions_t? = nil
    #else
    var raw = posix_spawn_file_actions_t()
    #endif

    init() { posix_spawn_file_actions_init(&raw) }

    mutating func destroy() { posix_spawn_file_actions_destroy(&raw) }

    mutating func open(_ target: Int32, _ path: String, _ flags: Int32) {
        posix_spawn_file_actions_addopen(&raw, target, path, flags, 0)
    }

    /// The child keeps the parent's descriptor `target` (0, 1 or 2) as it is. Nothing to do on
    /// Linux; on Darwin, where `POSIX_SPAWN_CLOEXEC_DEFAULT` closes what no action names, it
    /// must be named.
    mutating func inherit(_ target: Int32) {
        #if canImport(Darwin)
        posix_spawn_file_actions_addinherit_np(&raw, target)
        #endif
    }

    /// `dup2` clears close-on-exec on the copy, so the child keeps it.
    mutating func duplicate(_ descriptor: Int32, to target: Int32) {
        posix_spawn_file_actions_adddup2(&raw, descriptor, target)
    }

    mutating func changeDirectory(to directory: String) {
        replica_spawn_change_directory(&raw, directory)
    }

    /// Closes every descriptor above 2 in the child (on Darwin, `SpawnAttributes` sets
    /// `POSIX_SPAWN_CLOEXEC_DEFAULT` instead).
    mutating func closeAllAbove2() {
        replica_spawn_close_from(&raw, 3)
    }
}

/// The attributes of one `posix_spawn`: a process group of its own, every signal at its
/// default action, none blocked.
struct SpawnAttributes {
    #if canImport(Darwin)
    var raw: posix_spawnattr_t? = nil
    #else
    var raw = posix_spawnattr_t()
    #endif

    init() {
        posix_spawnattr_init(&raw)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        // The classic signals; SIGKILL and SIGSTOP cannot be changed (and the real-time ones
        // include the C library's own).
        for signal in Int32(1)..<32 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&raw, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&raw, &unblocked)
        posix_spawnattr_setpgroup(&raw, 0)
        var flags = Int32(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&raw, Int16(flags))
    }

    mutating func destroy() { posix_spawnattr_destroy(&raw) }
}

/// The pipes of a spawn: the child's ends are closed in the parent once it started (or failed
/// to), the parent's become `FileHandle`s (or are closed if the spawn failed).
struct PipeEnds {
    private var ends: [Int32: (parent: Int32, child: Int32)] = [:]

    /// A close-on-exec pipe for stream `target` (0 is written by the parent, 1 and 2 read).
    mutating func make(for target: Int32) throws -> (parent: Int32, child: Int32) {
        var fds: [Int32] = [-1, -1]
        let made = replica_pipe_close_on_exec(&fds)
        guard made == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        let pair = target == 0 ? (parent: fds[1], child: fds[0]) : (parent: fds[0], child: fds[1])
        ends[target] = pair
        return pair
    }

    func parentHandle(for target: Int32) -> FileHandle? {
        guard let parent = ends[target]?.parent, parent >= 0 else { return nil }
        return FileHandle(fileDescriptor: parent, closeOnDealloc: true)
    }

    mutating func closeChildEnds() {
        for (target, pair) in ends where pair.child >= 0 {
            close(pair.child)
            ends[target]?.child = -1
        }
    }

    mutating func closeParentEnds() {
        for (target, pair) in ends where pair.parent >= 0 {
            close(pair.parent)
            ends[target]?.parent = -1
        }
    }
}
