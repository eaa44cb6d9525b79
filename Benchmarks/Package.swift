// swift-tools-version: 6.0
import PackageDescription

// Benchmarks for Signals, against OpenCombine and a hand-written floor. A separate package so the
// root package keeps depending on nothing. Run from this folder:
//
//     swift run -c release signals-bench
let package = Package(
    name: "TransitBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [
        .package(name: "Transit", path: ".."),
        .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
        // The AsyncHTTPClient adapter and AsyncHTTPClient itself, for transport-bench's raw
        // AsyncHTTPClient contender and the chain on the adapter.
        .package(name: "TransitAsyncHTTPClient", path: "../Adapters/TransitAsyncHTTPClient"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // transport-bench's observed contenders: the monitor, and the test kits it reports to.
        .package(name: "TransitObservability", path: "../Adapters/TransitObservability"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // Counts the calls to malloc and the bytes they ask for (Linux: it replaces the C
        // library's allocator entry points and forwards to them).
        .target(name: "MallocCounter"),
        // The hand-written floor, in its own module like any library.
        .target(name: "BenchFloor"),
        // What the transport and soak benchmarks share: nginx on loopback, /proc/self/status.
        .target(name: "BenchSupport"),
        // glibc's heap statistics and malloc_trim, which the Glibc module does not export.
        .target(name: "SoakMalloc"),
        .executableTarget(
            name: "signals-bench",
            dependencies: [
                "BenchFloor",
                "MallocCounter",
                .product(name: "Signals", package: "Transit"),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ]
        ),
        // TransitCache's DiskCache against Foundation's URLCache; a 304 against a full download
        // over loopback; the peak memory of a 1 GiB response through the HTTP cache.
        .executableTarget(
            name: "cache-bench",
            dependencies: [
                .product(name: "TransitCache", package: "Transit"),
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
            ]
        ),
        // Transit's transport and request chain against raw URLSession and raw AsyncHTTPClient,
        // over nginx on loopback (nginx/nginx.sh): `swift run -c release transport-bench`.
        .executableTarget(
            name: "transport-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Signals", package: "Transit"),
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitAsyncHTTPClient", package: "TransitAsyncHTTPClient"),
                .product(name: "TransitObservability", package: "TransitObservability"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Resident memory over a long soak of mixed requests (ok, 404, refused, cancelled), raw
        // URLSession against Transit, each in its own process: `swift run -c release soak-bench`.
        .executableTarget(
            name: "soak-bench",
            dependencies: [
                "BenchSupport",
                "SoakMalloc",
                .product(name: "Signals", package: "Transit"),
                .product(name: "Transit", package: "Transit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
