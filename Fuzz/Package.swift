// swift-tools-version: 6.1
// The libFuzzer target for the wire decoders, kept out of the main package because it only
// links with `-sanitize=fuzzer`. Build and run with scripts/fuzz.
import Foundation
import PackageDescription

// A path dependency is named after its folder, which differs between checkouts.
let replicaFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "ReplicaFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "WireFuzz",
            dependencies: [.product(name: "ReplicaCore", package: replicaFolder)]
        )
    ],
    swiftLanguageModes: [.v6]
)
