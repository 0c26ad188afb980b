// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Replica",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ReplicaCore", targets: ["ReplicaCore"]),
        .executable(name: "replica-node", targets: ["ReplicaNode"]),
        .executable(name: "shared-counter-example", targets: ["SharedCounterExample"]),
        .executable(name: "replica-bench", targets: ["ReplicaBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // `swift package generate-documentation --target ReplicaCore` (the DocC catalog; CI builds it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CZMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"]), .brew(["zeromq"])]
        ),
        .target(
            name: "CSQLiteConfig",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .target(
            name: "ReplicaCore",
            dependencies: [
                "CZMQ",
                "CSQLiteConfig",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "ReplicaNode",
            dependencies: [
                "ReplicaCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "ReplicaBench",
            dependencies: [
                "ReplicaCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SharedCounterExample",
            dependencies: ["ReplicaCore"],
            path: "Examples/SharedCounter"
        ),
        .testTarget(
            name: "ReplicaCoreTests",
            dependencies: [
                "ReplicaCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            exclude: ["Fixtures"]  // read from the source tree (bytes written by older versions)
        ),
        .testTarget(
            name: "ReplicaNodeTests",
            dependencies: ["ReplicaNode", "ReplicaCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
