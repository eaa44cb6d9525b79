// swift-tools-version: 6.0
import PackageDescription

// sse-bench: Server-Sent Events parsed per second and the memory of a long stream, Transit's
// parser against mattt/EventSource 1.1.1's. A package of its own because EventSource does not
// build on Linux as published (its client calls `URLSession.bytes(for:delegate:)`, which Linux
// Foundation lacks): `run.sh` fetches its sources into Peer/ (not committed) with a shim that lets
// that client compile, and runs the benchmark. Run from this folder:
//
//     ./run.sh
let package = Package(
    name: "TransitSSEBenchmark",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [
        .package(name: "Transit", path: "../.."),
    ],
    targets: [
        // mattt/EventSource 1.1.1 as published, plus Shim/URLSessionBytes.swift (run.sh puts both here).
        .target(name: "EventSource", path: "Peer/EventSource", swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(
            name: "sse-bench",
            dependencies: [
                "EventSource",
                .product(name: "Transit", package: "Transit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
