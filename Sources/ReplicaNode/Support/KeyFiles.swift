import Foundation
import ReplicaCore

/// Reading and writing CURVE key files (see docs/security.md).
///
/// `ID.key` (mode 0600) holds `public-key = ...` and `secret-key = ...`; `ID.pub` holds the
/// public key alone. A trust directory holds `ID.pub` files; a trust file holds `ID KEY` lines.
enum KeyFiles {
    struct Invalid: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func write(_ keys: CurveKeyPair, id: String, to directory: URL, force: Bool) throws -> (key: URL, pub: URL) {
        /// Each step's failure in one line naming the path (Foundation's own text was the whole
        /// NSError: `Error Domain=NSCocoaErrorDomain Code=4 ...`).
        func step(_ what: String, _ path: String, _ body: () throws -> Void) throws {
            do {
                try body()
            } catch {
                throw Invalid(message: "cannot \(what) \(path): \(FileSystemReason.of(error))")
            }
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw Invalid(message: "cannot create directory \(directory.path): \(FileSystemReason.ofDirectory(error, at: directory.path))")
        }
        let keyURL = directory.appendingPathComponent("\(id).key")
        let pubURL = directory.appendingPathComponent("\(id).pub")
        for url in [keyURL, pubURL] where FileManager.default.fileExists(atPath: url.path) && !force {
            throw Invalid(message: "\(url.path) exists; use --force to replace it (the old key stops working)")
        }
        let stamp = ISO8601DateFormatter().string(from: Date())
        let secret = "# Replica CURVE key pair of \(id), made \(stamp). Keep this file secret.\npublic-key = \(keys.publicKey)\nsecret-key = \(keys.secretKey)\n"
        guard FileManager.default.createFile(atPath: keyURL.path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]) else {
            // createFile says only that it failed: the directory's own state says why, mostly.
            let reason = access(directory.path, W_OK) == 0 ? "the file could not be written" : String(cString: strerror(errno))
            throw Invalid(message: "cannot write \(keyURL.path): \(reason)")
        }
        try step("set the mode of", keyURL.path) { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyURL.path) }
        try step("write", pubURL.path) { try Data("# Replica public key of \(id), made \(stamp).\n\(keys.publicKey)\n".utf8).write(to: pubURL) }
        return (keyURL, pubURL)
    }

    /// Reads a `.key` file; the public key is derived from the secret and must match.
    static func readKeyPair(_ url: URL) throws -> CurveKeyPair {
        let text = try read(url, what: "key file")
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        guard let secret = fields["secret-key"], CurveKeyPair.isValidKey(secret) else {
            throw Invalid(message: "\(url.path) has no valid secret-key line (make one with replica-node keygen)")
        }
        let keys: CurveKeyPair
        do {
            keys = try CurveKeyPair(secretKey: secret)
        } catch {
            throw Invalid(message: "\(url.path): secret-key is not a usable CURVE secret key (\(error)); make a new pair with replica-node keygen")
        }
        if let stated = fields["public-key"], stated != keys.publicKey {
            throw Invalid(message: "\(url.path): public-key does not belong to secret-key")
        }
        return keys
    }

    /// A warning when the secret key file can be read by others than its owner (keygen makes it
    /// 0600; a copy or an archive may not keep that), nil otherwise.
    static func exposure(of url: URL) -> String? {
        // The file itself, not a symbolic link to it (a mounted secret often is one: mode 777).
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path))?[.posixPermissions] as? Int,
              mode & 0o077 != 0 else { return nil }
        return "the secret key file \(url.path) can be read by other users (mode \(String(mode & 0o777, radix: 8))): "
            + "anyone who reads it can join the cluster as this node; run chmod 600 on it"
    }

    /// The text of `url`, or a `FileProblem` naming it as `what` ("key file").
    private static func read(_ url: URL, what: String) throws -> String {
        do {
            return try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw FileProblem(action: "cannot read \(what)", path: url.relativePath, error: error)
        }
    }

    /// Node id -> public key, from a directory of `ID.pub` files or a file of `ID KEY` lines.
    /// Any bad file or line is an error (at start-up, where the operator is watching).
    static func readTrust(_ url: URL) throws -> [String: String] {
        let read = try readTrust(url, skippingBadEntries: false)
        return read.trusted
    }

    /// A trust source read while the node runs: the keys of its good entries, and what was
    /// skipped and why (a `.pub` file or line that holds no valid key is not trusted, but does
    /// not stop the others from being read: removing a key must revoke it even while another
    /// file is being written, or was left broken).
    struct TrustRead: Equatable {
        var trusted: [String: String]
        /// Why each bad entry was skipped.
        var skipped: [String]
        /// The ids of the `ID.pub` files skipped (a trust directory only).
        var skippedIDs: [String] = []
    }

    static func readTrust(_ url: URL, skippingBadEntries skipping: Bool) throws -> TrustRead {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw Invalid(message: "trust path \(url.path) does not exist")
        }
        var result = TrustRead(trusted: [:], skipped: [])
        func bad(_ message: String) throws {
            guard skipping else { throw Invalid(message: message) }
            result.skipped.append(message)
        }
        if isDirectory.boolValue {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            } catch {
                throw FileProblem(action: "cannot read trust directory", path: url.relativePath, error: error)
            }
            for name in names.sorted() where name.hasSuffix(".pub") {
                let text: String
                do {
                    text = try read(url.appendingPathComponent(name), what: "public key file")
                } catch {
                    try bad("\(error)")
                    result.skippedIDs.append(String(name.dropLast(4)))
                    continue
                }
                let keys = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
                guard keys.count == 1, CurveKeyPair.isValidKey(keys[0]) else {
                    try bad("\(name) in \(url.path) must hold one Z85 public key")
                    result.skippedIDs.append(String(name.dropLast(4)))
                    continue
                }
                result.trusted[String(name.dropLast(4))] = keys[0]
            }
        } else {
            for (number, line) in try read(url, what: "trust file").split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty || text.hasPrefix("#") { continue }
                let parts = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                guard parts.count == 2, CurveKeyPair.isValidKey(parts[1]) else {
                    try bad("\(url.path) line \(number + 1): expected 'ID PUBLIC-KEY'")
                    continue
                }
                result.trusted[parts[0]] = parts[1]
            }
        }
        guard !result.trusted.isEmpty else { throw Invalid(message: "no public keys found in \(url.path)") }
        return result
    }
}
