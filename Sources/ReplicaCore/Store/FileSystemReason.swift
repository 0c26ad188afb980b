import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a file-system call failed, in the system's words (`no such file or directory`), instead
/// of Foundation's description of the error (`Error Domain=NSCocoaErrorDomain Code=260 ...`).
public enum FileSystemReason {
    /// Why a directory could not be made at `path`: "it is a file, not a directory" where
    /// `mkdir` would only say that something exists there.
    public static func ofDirectory(_ error: any Error, at path: String) -> String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            return "it is a file, not a directory"
        }
        return of(error)
    }

    /// The reason behind `error`: the errno under it if there is one.
    public static func of(_ error: any Error) -> String {
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
    public static func errnoCode(_ error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        let error = error as NSError
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error { return errnoCode(underlying) }
        return nil
    }

    /// `strerror`, starting lowercase as the rest of a message does: "no such file or directory".
    public static func systemMessage(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
