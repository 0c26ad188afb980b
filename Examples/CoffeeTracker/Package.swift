// swift-tools-version: 6.1
// Coffee Tracker, a package that uses ReplicaCore exactly as the README's "Use the library"
// shows (the path form: the library is two folders up).
import PackageDescription

let package = Package(
    name: "CoffeeTracker",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Replica", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "CoffeeTracker",
            dependencies: [
                .product(name: "ReplicaCore", package: "Replica"),
                .product(name: "Logging", package: "swift-log"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
