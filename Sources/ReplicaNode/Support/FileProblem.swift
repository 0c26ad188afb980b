import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A file or directory that could not be read or made, as one line naming the path and the
/// system's reason (`cannot read key file keys/node1.key: no such file or directory`), instead
/// of Foundation's description of the error (`Error Domain=NSCocoaErrorDomain Code=260 ...`).
struct FileProblem: Error, CustomStringConvertible {
    /// What could not be done: "cannot read key file", "cannot create data directory".
    var action: String
    var path: String
    var reason: String

    init(action: String, path: String, error: any Error) {
        self.action = action
        self.path = path
        reason = Self.reason(error)
    }

    var description: String { "\(action) \(path): \(reason)" }

    /// The bytes of the input file `path` that a command was given, or of standard input for
    /// `-` (as `set --file` and `import` take them).
    static func readInput(_ path: String) throws(FileProblem) -> Data {
        guard path != "-" else { return FileHandle.standardInput.readDataToEndOfFile() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FileProblem(action: "cannot read", path: path, error: error)
        }
    }

    /// Why `error` happened, in the system's words: the errno behind it if there is one.
    static func reason(_ error: any Error) -> String {
        if let errno = errnoCode(error) { return systemMessage(errno) }
        let error = error as NSError
        if error.domain == NSCocoaErrorDomain {
            switch CocoaError.Code(rawValue: error.code) {
            case .fileNoSuchFile, .fileReadNoSuchFile: return systemMessage(ENOENT)
            case .fileReadNoPermission, .fileWriteNoPermission: return systemMessage(EACCES)
            case .fileReadInapplicableStringEncoding, .fileReadCorruptFile: return "not UTF-8 text"
            case .fileWriteOutOfSpace: return systemMessage(ENOSPC)
            case .fileWriteVolumeReadOnly: return systemMessage(EROFS)
            case .fileWriteFileExists: return systemMessage(EEXIST)
            default: break
            }
        }
        return error.localizedDescription
    }

    /// The errno of a POSIX error, or of the POSIX error under a Foundation one.
    static func errnoCode(_ error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        let error = error as NSError
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error { return errnoCode(underlying) }
        return nil
    }

    /// `strerror`, starting lowercase as the rest of the line does: "no such file or directory".
    static func systemMessage(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
