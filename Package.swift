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
        // Simulated clusters in one process: for the simulator and for users' own tests.
        .library(name: "ReplicaSimulation", targets: ["ReplicaSimulation"]),
        .executable(name: "replica-sim", targets: ["ReplicaSim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // Metrics: the library emits through swift-metrics (any backend); replica-node serves
        // them to Prometheus over SwiftNIO's HTTP/1 (swift-prometheus needs Swift 6.2 or later).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
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
        // Starts child processes without Foundation's `Process` (see `ChildProcess`).
        .target(name: "CSpawnActions"),
        .target(name: "Spawn", dependencies: ["CSpawnActions"]),
        .target(
            name: "ReplicaCore",
            dependencies: [
                "CZMQ",
                "CSQLiteConfig",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "ReplicaNode",
            dependencies: [
                "ReplicaCore",
                "Spawn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "ReplicaBench",
            dependencies: [
                "ReplicaCore",
                "Spawn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "ReplicaSimulation",
            dependencies: [
                "ReplicaCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "ReplicaSim",
            dependencies: [
                "ReplicaSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
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
                "Spawn",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // Tests inject faults into a store's database file (a trigger that refuses a row).
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Fixtures"]  // read from the source tree (bytes written by older versions)
        ),
        .testTarget(
            name: "ReplicaSimulationTests",
            dependencies: ["ReplicaSimulation", "ReplicaCore", "Spawn"]
        ),
        .testTarget(
            name: "ReplicaNodeTests",
            dependencies: ["ReplicaNode", "ReplicaCore", "Spawn"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
