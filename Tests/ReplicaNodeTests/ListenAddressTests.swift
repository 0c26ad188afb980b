import Foundation
@testable import ReplicaNode
import Testing

/// `serve --listen HOST:PORT`: libzmq binds an address or an interface, not a host name; a name
/// is resolved before anything is made (`localhost` failed at bind with "No such device", after
/// the data directory had been created).
@Suite struct ListenAddressTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("::1", "::1"), ("*", "*"), ("lo", "lo"),
        ("localhost", "127.0.0.1"),
    ])
    func bindableHosts(_ given: String, _ bound: String) {
        #expect(Serve.bindableHost(given) == bound)
    }

    @Test func aNameThatDoesNotResolveIsRefusedBeforeAnythingIsMade() throws {
        #expect(Serve.bindableHost("no-such-host.invalid") == nil)
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("replica-listen-\(UUID().uuidString.prefix(6))")
        let result = try replicaNode(["serve", "--id", "n1", "--listen", "no-such-host.invalid:7000", "--insecure", "--data", data.path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is not an IP address, an interface or a name this machine resolves"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data.path), "no data directory made")
    }

    /// A data path too long for its control socket (a Unix socket's path holds 107 bytes) is
    /// refused up front, saying so; it failed at bind with "File name too long".
    @Test func aDataPathTooLongForTheControlSocketIsRefused() throws {
        let data = "/tmp/" + String(repeating: "d", count: 110)
        let result = try replicaNode(["serve", "--id", "n1", "--listen", "127.0.0.1:7000", "--insecure", "--data", data])
        #expect(result.status == 64)
        #expect(result.stderr.contains("path is too long"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data))
    }

    /// A flag wins over its variable: --key and --trust on the command line override a
    /// REPLICA_INSECURE=1 in the environment (it was refused as a contradiction); --insecure
    /// with them still contradicts itself.
    @Test func keyFlagsWinOverInsecureFromTheEnvironment() throws {
        let base = ["--id", "n1", "--listen", "127.0.0.1:7000", "--data", "/tmp/replica-flags"]
        let flags = try Serve.parse(base + ["--key", "/tmp/k/n1.key", "--trust", "/tmp/k"])
        let settings = try flags.settings(environment: ["REPLICA_INSECURE": "1"])
        #expect(settings.keyFile?.path == "/tmp/k/n1.key")
        #expect(throws: (any Error).self) { try Serve.parse(base + ["--insecure", "--key", "/tmp/k/n1.key", "--trust", "/tmp/k"]).settings(environment: [:]) }
        let insecure = try Serve.parse(base + ["--insecure"]).settings(environment: ["REPLICA_KEY": "/tmp/k/n1.key", "REPLICA_TRUST": "/tmp/k"])
        #expect(insecure.keyFile == nil, "--insecure wins over the variables")
    }

    /// `--sync-chunk-timeout` takes 1 to 3600 seconds; anything else is refused before the node
    /// starts.
    @Test func theSyncChunkTimeoutIsChecked() throws {
        let base = ["--id", "n1", "--listen", "127.0.0.1:7000", "--data", "/tmp/replica-flags", "--insecure"]
        #expect(try Serve.parse(base + ["--sync-chunk-timeout", "90"]).syncChunkTimeout == 90)
        #expect(try Serve.parse(base).syncChunkTimeout == 10)
        for bad in ["0", "0.5", "3601", "nan", "inf"] {
            #expect(throws: (any Error).self, "\(bad)") { try Serve.parse(base + ["--sync-chunk-timeout", bad]) }
        }
    }
}

/// `serve` warns about a secret key file others can read.
@Suite struct KeyFileModeTests {
    @Test func aKeyFileOthersCanReadIsWarnedAbout() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-keymode-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try replicaNode(["keygen", "--id", "n1", "--out", directory.path]).status == 0)
        let key = directory.appendingPathComponent("n1.key")
        #expect(KeyFiles.exposure(of: key) == nil, "keygen makes it 0600")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.path)
        #expect(KeyFiles.exposure(of: key)?.contains("mode 644") == true)
    }
}
