// swift-tools-version: 6.0
import PackageDescription

// Transit's policy store on PostgreSQL (postgres-nio): rate limits, cooldowns and retry budgets that
// a fleet of processes shares. A separate package so the root package keeps depending on nothing.
// Test from this folder with `swift test` (the tests that need a database skip unless
// TRANSIT_POSTGRES_URL names one); `scripts/fleet-check` runs four processes against a real server.
let package = Package(
    name: "TransitPostgres",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TransitPostgres", targets: ["TransitPostgres"]),
        .executable(name: "fleet-check", targets: ["FleetCheck"]),
    ],
    dependencies: [
        .package(name: "Transit", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Imported directly (event loops, the logger the client takes); postgres-nio depends on both.
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .target(
            name: "TransitPostgres",
            dependencies: [
                .product(name: "Transit", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `fleet-check server|client …`: the recording server and the client processes that
        // `scripts/fleet-check` starts.
        .executableTarget(
            name: "FleetCheck",
            dependencies: [
                "TransitPostgres",
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
            ]
        ),
        .testTarget(
            name: "TransitPostgresTests",
            dependencies: [
                "TransitPostgres",
                .product(name: "Transit", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "SignalsTesting", package: "Transit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
