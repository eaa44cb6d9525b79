// swift-tools-version: 6.0
import PackageDescription

// Logs (swift-log), metrics (swift-metrics) and traces (swift-distributed-tracing) for Transit's
// `HTTPClient`, through one `HTTPEventMonitor`. A separate package so the root package keeps
// depending on nothing. Test from this folder with `swift test`.
let package = Package(
    name: "TransitObservability",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TransitObservability", targets: ["TransitObservability"]),
        .executable(name: "observability-demo", targets: ["ObservabilityDemo"]),
    ],
    dependencies: [
        .package(name: "Transit", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "TransitObservability",
            dependencies: [
                .product(name: "Transit", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // `swift run observability-demo`: one request through a redirect, a token renewal and a
        // retry after a 503, against a loopback server; prints its trace and the metrics.
        .executableTarget(
            name: "ObservabilityDemo",
            dependencies: [
                "TransitObservability",
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Examples/ObservabilityDemo"
        ),
        .testTarget(
            name: "TransitObservabilityTests",
            dependencies: [
                "TransitObservability",
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "SignalsTesting", package: "Transit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
