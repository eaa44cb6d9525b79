// swift-tools-version: 6.0
import PackageDescription

// Transit on AsyncHTTPClient (SwiftNIO): an `HTTPTransport` for servers. A separate package so the
// root package keeps depending on nothing. Test from this folder with `swift test`.
let package = Package(
    name: "TransitAsyncHTTPClient",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TransitAsyncHTTPClient", targets: ["TransitAsyncHTTPClient"]),
        .executable(name: "forum-ahc", targets: ["ForumAHC"]),
    ],
    dependencies: [
        .package(name: "Transit", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Imported directly (NIO types in the transport's API and its error mapping); AsyncHTTPClient
        // depends on both already, so they add nothing to build.
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        // Chain validation and pin digests for pinned hosts; certificates minted at test time
        // for the TLS test server.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.1.0"),
        // AsyncHTTPClient depends on it already: its no-op tracer is recognised and turned off, and
        // its own tracer dropped unless asked for (the tests record spans with InMemoryTracing).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "TransitAsyncHTTPClient",
            dependencies: [
                .product(name: "Transit", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                // Pinned hosts: their chains validated and their pins matched in the handshake.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                "CTransitZlib",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The system's zlib, which decodes gzip and deflate bodies.
        .target(
            name: "CTransitZlib",
            linkerSettings: [.linkedLibrary("z")]
        ),
        // `swift run forum-ahc [--transport ahc|urlsession]`: the README's PostService chain on either
        // transport, against an embedded forum API.
        .executableTarget(
            name: "ForumAHC",
            dependencies: [
                "TransitAsyncHTTPClient",
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
            ],
            path: "Examples/ForumAHC"
        ),
        .testTarget(
            name: "TransitAsyncHTTPClientTests",
            dependencies: [
                "TransitAsyncHTTPClient",
                .product(name: "Transit", package: "Transit"),
                .product(name: "TransitTesting", package: "Transit"),
                .product(name: "Signals", package: "Transit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                // EmbeddedEventLoop: the idle sweeper's ticks in virtual time.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                // The TLS test server and its certificates, and gzip fixtures made with zlib.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The TLS events a pinned-path connection waits for, sent by hand in virtual time.
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                // A tracer that records spans: AsyncHTTPClient's own span only when asked for.
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                "CTransitZlib",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
