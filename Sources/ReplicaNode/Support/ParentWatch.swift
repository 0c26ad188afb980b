import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `serve --parent PID`: stops the node once process PID is no longer its parent. `cluster`
/// passes its own PID, so that a cluster killed with SIGKILL (which it cannot pass on) does not
/// leave its nodes serving: they run in process groups of their own, and nothing else reaches them.
///
/// It asks `getppid()` twice a second: an orphan is given to init (or a subreaper) at once.
/// Not `PR_SET_PDEATHSIG`: it follows the parent *thread*, and `cluster` starts nodes from a
/// pool thread that may end at any time; nor a pidfd, which is Linux's alone.
enum ParentWatch {
    static let interval: TimeInterval = 0.5

    /// Calls `gone` once, on a thread of its own, when `parent` is no longer this process's
    /// parent (`serve` checks that it is, at validation).
    static func start(parent: pid_t, gone: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            while getppid() == parent { Thread.sleep(forTimeInterval: interval) }
            gone()
        }
    }
}
