// swift-tools-version: 6.0
import PackageDescription

// Transit depends on no package: only the toolchain's Foundation, Dispatch, Synchronization,
// XCTest and Swift Testing. Peers used for comparison live in Benchmarks/Package.swift.
let package = Package(
    name: "Transit",
    // `Synchronization` (Mutex) is the one lock every module uses; these are its minimum OS versions.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Signals", targets: ["Signals"]),
        .library(name: "Transit", targets: ["Transit"]),
        .library(name: "SignalsTesting", targets: ["SignalsTesting"]),
        .library(name: "TransitTesting", targets: ["TransitTesting"]),
        .library(name: "TransitCache", targets: ["TransitCache"]),
        .executable(name: "forum", targets: ["Forum"]),
    ],
    targets: [
        .target(name: "Signals"),
        .target(name: "Transit", dependencies: ["Signals"]),
        // The recorder and marble diagrams for any Signal: no HTTP.
        .target(name: "SignalsTesting", dependencies: ["Signals"]),
        // Stub transports, the loopback server, transport conformance; re-exports SignalsTesting.
        .target(name: "TransitTesting", dependencies: ["Transit", "Signals", "SignalsTesting"]),
        .target(name: "TransitCache", dependencies: ["Transit", "Signals"]),
        .executableTarget(
            name: "Forum",
            dependencies: ["Transit", "TransitTesting", "Signals", "TransitCache"],
            path: "Examples/Forum"
        ),
        .testTarget(name: "SignalsTests", dependencies: ["Signals", "SignalsTesting"]),
        .testTarget(name: "SignalsTestingTests", dependencies: ["SignalsTesting", "Signals"]),
        .testTarget(name: "TransitTests", dependencies: ["Transit", "TransitTesting", "Signals"]),
        .testTarget(name: "TransitTestingTests", dependencies: ["TransitTesting", "Transit", "Signals"]),
        .testTarget(name: "TransitCacheTests", dependencies: ["TransitCache", "Transit", "TransitTesting", "Signals"]),
        // The README's Swift, gathered by scripts/readme-snippets: built with the tests, so every
        // snippet in the README compiles against the package.
        .testTarget(name: "ReadmeSnippets", dependencies: ["Transit", "TransitCache", "TransitTesting", "Signals"], path: "Tests/ReadmeSnippets"),
        // The child process TransitCacheTests kill mid-write and run on a full or read-only folder.
        .executableTarget(
            name: "TransitCacheChild",
            dependencies: ["TransitCache", "Transit", "TransitTesting", "Signals"],
            path: "Tests/TransitCacheChild"
        ),
    ],
    swiftLanguageModes: [.v6]
)
