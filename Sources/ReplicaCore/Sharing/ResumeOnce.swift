import Foundation
import Synchronization

/// Misuse of a continuation (resumed twice, or never) is reported here instead of crashing or
/// hanging. Tests read `count`; a program sees one line on stderr per misuse.
public enum ContinuationMisuse {
    private static let reports = Mutex<[String]>([])

    public static var count: Int { reports.withLock { $0.count } }
    public static var messages: [String] { reports.withLock { $0 } }

    static func report(_ message: String) {
        reports.withLock { $0.append(message) }
        FileHandle.standardError.write(Data("replica: warning: \(message)\n".utf8))
    }
}

/// Delivers one result to a callback, exactly once. A second delivery is reported and ignored;
/// a box released without a delivery reports the leak and delivers `fallback`, so nobody
/// waits forever.
final class ResumeOnce<Result: Sendable>: Sendable {
    private let callback: Mutex<(@Sendable (Result) -> Void)?>
    private let what: String
    private let fallback: @Sendable () -> Result

    init(_ what: String, fallback: @escaping @Sendable () -> Result, callback: @escaping @Sendable (Result) -> Void) {
        self.what = what
        self.fallback = fallback
        self.callback = Mutex(callback)
    }

    func resume(_ result: Result) {
        guard let callback = callback.withLock({ callback in defer { callback = nil }; return callback }) else {
            ContinuationMisuse.report("\(what) was resumed more than once; the extra result is ignored")
            return
        }
        callback(result)
    }

    deinit {
        if let callback = callback.withLock({ $0 }) {
            ContinuationMisuse.report("\(what) was never resumed; resuming it with an error")
            callback(fallback())
        }
    }
}
