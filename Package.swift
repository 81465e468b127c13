// swift-tools-version:6.1
// Ferry: background transfers for Swift on Linux. See README.md and ARCHITECTURE.md.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Ferry",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Ferry", targets: ["Ferry"]),
        .library(name: "ByteClubServer", targets: ["ByteClubServer"]),
        .library(name: "ShareKit", targets: ["ShareKit"]),
        .executable(name: "ferry", targets: ["FerryCLI"]),
        .executable(name: "byteclub-server", targets: ["ByteClubServerApp"]),
        .executable(name: "ferry-testserver", targets: ["FerryTestServer"]),
        .executable(name: "ferryd", targets: ["FerryDaemonApp"]),
        .executable(name: "photodrop", targets: ["PhotoDropApp"]),
        .executable(name: "photodrop-share", targets: ["PhotoDropShare"]),
        .executable(name: "sharealike", targets: ["ShareAlikeApp"]),
        .executable(name: "sharealike-share", targets: ["ShareAlikeShare"]),
        .executable(name: "imgshare", targets: ["ImgShareApp"]),
        .executable(name: "imgshare-share", targets: ["ImgShareShare"]),
        .executable(name: "byteclub", targets: ["ByteClubApp"]),
        // Warns about delegate methods that nearly match a URLSession delegate requirement.
        .plugin(name: "DelegateCheck", targets: ["DelegateCheck"]),
        .executable(name: "ferry-delegate-check", targets: ["FerryDelegateCheck"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // MARK: Ferry client side (issue: foundation)
        .target(
            name: "FerryEngine",
            dependencies: [
                "CZlib",
                "FerryCore",
                "FerrySystem",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Many whole-file GETs over kept-alive HTTP/1.1 connections on the event loops, for
        // `ferry get --many`: the CLI's, not part of the `Ferry` library's API.
        .target(
            name: "FerryBatch",
            dependencies: [
                "FerryEngine",
                "FerrySystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The vocabulary every layer shares, defined once: header fields, a task's kind and
        // state, the retry policy and its rulebook. Foundation only.
        .target(name: "FerryCore", swiftSettings: swiftSettings),
        // POSIX helpers every layer needs once: the write-all loop, signals. No dependencies.
        .target(name: "FerrySystem", swiftSettings: swiftSettings),
        // The network as the kernel (rtnetlink, /proc) and NetworkManager (D-Bus) describe it,
        // and what a session's network settings allow of it: read by ferryd's scheduler and by
        // an app's in-process sessions.
        .target(
            name: "FerryNetwork",
            dependencies: ["FerryCore", "FerryProtocol", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Ferry",
            dependencies: [
                "FerryCore",
                "FerrySystem",
                "FerryEngine",
                "FerryNetwork",
                "FerryProtocol",
                "FerryDaemonClient",
                "FerryApps",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FerryCLI",
            dependencies: [
                "Ferry",
                "FerryEngine",
                "FerryBatch",
                "FerrySystem",
                "ShareKit",
                "FerryApps",
                "FerryNetwork",
                "FerryProtocol",
                "FerryDaemonClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The DelegateCheck build tool plugin and the check it runs: methods that nearly match
        // a requirement of Ferry's URLSession delegate protocols (a wrong label or type), which
        // are never called and which Swift does not warn about in a class's own body.
        // Foundation only: it is built in the build of every package that uses the plugin.
        .executableTarget(name: "FerryDelegateCheck", swiftSettings: swiftSettings),
        .plugin(name: "DelegateCheck", capability: .buildTool(), dependencies: ["FerryDelegateCheck"]),
        // MARK: ferryd foundations (issue: ferryd)
        // The versioned messages and framing between library and daemon: NIOCore only,
        // so framing cannot reach a socket or a database.
        .target(
            name: "FerryProtocol",
            dependencies: ["FerryCore", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        // The client end of ferryd's socket: connect (starting ferryd on demand), handshake,
        // requests matched to replies, pushed events. Used by the Ferry library and the CLI.
        .target(
            name: "FerryDaemonClient",
            dependencies: [
                "FerryProtocol",
                "FerryApps",
                "FerrySystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Durable state: sessions, tasks, undelivered events (GRDB over SQLite, WAL).
        .target(
            name: "FerryStore",
            dependencies: [
                "FerryCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Real servers for tests and benchmarks: a scriptable misbehaving HTTP server,
        // a resumable-upload server on NIOResumableUpload, and an nginx harness.
        .target(
            name: "FerryTestSupport",
            dependencies: [
                "FerrySystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOResumableUpload", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FerryTestServer",
            dependencies: ["FerrySystem", "FerryTestSupport"],
            swiftSettings: swiftSettings
        ),
        // ferryd: sockets, connections, owners, events, scheduling through FerryEngine,
        // relaunch. A library, so that all of it is testable; `ferryd` is a thin executable.
        .target(
            name: "FerryDaemon",
            dependencies: [
                "FerryProtocol",
                "FerryStore",
                "FerryEngine",
                "FerryApps",
                "FerrySystem",
                "FerryNetwork",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FerryDaemonApp",
            dependencies: [
                "FerryDaemon",
                "FerryStore",
                "FerryApps",
                "FerryNetwork",
                "FerrySystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // App manifests, app groups' containers, who a socket peer is, launching apps:
        // the Linux words for Info.plist and entitlements. Foundation and swift-log only.
        .target(
            name: "FerryApps",
            dependencies: ["FerryCore", "FerrySystem", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // MARK: ShareKit (issue: ShareKit and `ferry share`)
        // libmagic: a file's type from its bytes.
        // zlib, for response bodies sent gzip or deflate coded (FerryEngine's ContentDecoder).
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CMagic",
            path: "Sources/CMagic",
            pkgConfig: "libmagic",
            providers: [.apt(["libmagic-dev"])]
        ),
        // Share extensions: type identifiers, activation rules, extension context and items,
        // the compose sheet, image details. Uploads nothing itself: extensions use Ferry.
        .target(
            name: "ShareKit",
            dependencies: [
                "FerryApps",
                "FerrySystem",
                "CMagic",
                "CVips",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // MARK: byteclub-server (issue: byteclub-server)
        // libvips (Debian's libvips42, from scripts/install-deps), loaded on first use rather
        // than linked: see Sources/CVips/include/cvips.h.
        .target(name: "CVips", path: "Sources/CVips"),
        .target(
            name: "ByteClubServer",
            dependencies: [
                "CVips",
                "FerrySystem",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOResumableUpload", package: "swift-nio-extras"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ByteClubServerApp",
            dependencies: [
                "ByteClubServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // MARK: Examples
        // PhotoDrop: an app and its share extension sharing a background session through an
        // app group; PhotoDropKit is the completion code both run (rule 5 of the ferryd issue).
        // The native API's sample (Session, SessionDelegate); the other examples speak URLSession.
        .target(
            name: "PhotoDropKit",
            dependencies: ["Ferry", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            path: "Examples/PhotoDrop/Kit",
            swiftSettings: swiftSettings
        ),
        .executableTarget(name: "PhotoDropApp", dependencies: ["PhotoDropKit", "Ferry"], path: "Examples/PhotoDrop/App", swiftSettings: swiftSettings),
        .executableTarget(name: "PhotoDropShare", dependencies: ["PhotoDropKit", "Ferry"], path: "Examples/PhotoDrop/Share", swiftSettings: swiftSettings),
        // What the example apps share: a JSON-lines history and a settings file in a container.
        .target(name: "ExampleSupport", dependencies: ["Ferry", "FerryCore"], path: "Examples/Support", swiftSettings: swiftSettings),
        // ShareAlike: a share extension that posts {text, image_details} JSON to a request bin
        // through the group's background URLSession; the app records how each post went.
        .target(name: "ShareAlikeKit", dependencies: ["Ferry", "ExampleSupport"], path: "Examples/ShareAlike/Kit", swiftSettings: swiftSettings),
        .executableTarget(name: "ShareAlikeApp", dependencies: ["ShareAlikeKit", "ExampleSupport", "Ferry"], path: "Examples/ShareAlike/App", swiftSettings: swiftSettings),
        .executableTarget(name: "ShareAlikeShare", dependencies: ["ShareAlikeKit", "ExampleSupport", "Ferry", "ShareKit"], path: "Examples/ShareAlike/Share", swiftSettings: swiftSettings),
        // ImgShare: a share extension that uploads an image to the Imgur-shaped API in the
        // background; the app's ImgurService keeps callbacks and response bytes per task.
        .target(name: "ImgShareKit", dependencies: ["Ferry", "ExampleSupport"], path: "Examples/ImgShare/Kit", swiftSettings: swiftSettings),
        .executableTarget(name: "ImgShareApp", dependencies: ["ImgShareKit", "ExampleSupport", "Ferry"], path: "Examples/ImgShare/App", swiftSettings: swiftSettings),
        .executableTarget(name: "ImgShareShare", dependencies: ["ImgShareKit", "ExampleSupport", "Ferry", "ShareKit"], path: "Examples/ImgShare/Share", swiftSettings: swiftSettings),
        // Byte Club: the NSURLSession tutorial's notes-and-photos club app on byteclub-server, on
        // the Ferry library only, in URLSession's spelling (ByteClubKit: the app's code; `byteclub`: its CLI).
        .target(
            name: "ByteClubKit",
            dependencies: [
                "Ferry", "ExampleSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Examples/ByteClub/Kit", swiftSettings: swiftSettings),
        .executableTarget(
            name: "ByteClubApp",
            dependencies: ["ByteClubKit", "CVips", "FerrySystem", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/ByteClub/App", swiftSettings: swiftSettings),
        // MARK: Benchmarks (run by Benchmarks/*.sh)
        .executableTarget(
            name: "MessageDecoding", dependencies: ["FerryCore", "FerryProtocol", .product(name: "NIOCore", package: "swift-nio")],
            path: "Benchmarks/MessageDecoding", swiftSettings: swiftSettings),
        .executableTarget(name: "EventLatency", dependencies: ["Ferry"], path: "Benchmarks/EventLatency", swiftSettings: swiftSettings),
        .executableTarget(name: "ManyTasks", dependencies: ["Ferry"], path: "Benchmarks/ManyTasks", swiftSettings: swiftSettings),
        .executableTarget(
            name: "HTTPClientPeer",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOCore", package: "swift-nio")],
            path: "Benchmarks/HTTPClientPeer", swiftSettings: swiftSettings),
        // MARK: Tests
        .testTarget(
            name: "FerryCoreTests",
            dependencies: ["FerryCore", "FerryTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryEngineTests",
            dependencies: ["FerryCore", "FerryEngine", "FerryTestSupport",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOHTTP1", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryBatchTests",
            dependencies: ["FerryCore", "FerryBatch", "FerryEngine", "FerryTestSupport", .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryTests",
            // FerryDaemonApp: so that `swift test` builds the `ferryd` the background tests run.
            // and the example apps and byteclub-server the end-to-end tests run;
            // FerryDelegateCheck: the near-miss check's rules, tested directly.
            dependencies: ["Ferry", "FerryEngine", "FerryApps", "FerryTestSupport", "FerryDaemonApp", "PhotoDropApp", "PhotoDropShare", "ByteClubServerApp",
                           "FerryCLI", "ShareAlikeApp", "ShareAlikeShare", "ImgShareApp", "ImgShareShare", "FerryDelegateCheck"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryProtocolTests",
            dependencies: ["FerryProtocol", "FerryCore", .product(name: "NIOEmbedded", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryStoreTests",
            dependencies: ["FerryStore", "FerryCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryCLITests",
            // FerryCLI: so that `swift test` builds the `ferry` binary the tests run.
            dependencies: ["FerryCLI", "FerryTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryDaemonTests",
            // FerryDaemonApp: so that `swift test` builds the `ferryd` binary the tests run.
            dependencies: [
                "FerryCore",
                "FerryDaemon",
                "FerryDaemonApp",
                "FerryDaemonClient",
                "FerryApps",
                "FerryNetwork",
                "FerryProtocol",
                "FerryStore",
                "FerryEngine",
                "FerryTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryAppsTests",
            dependencies: ["FerryApps", "FerryTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ShareKitTests",
            dependencies: ["ShareKit", "FerryApps", "FerryTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryTestSupportTests",
            dependencies: ["FerryTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ByteClubTests",
            // The tests run the `byteclub`, `byteclub-server`, `ferryd` and `ferry` binaries.
            dependencies: ["ByteClubKit", "ByteClubApp", "ByteClubServerApp", "FerryDaemonApp", "FerryCLI", "FerryTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ByteClubServerTests",
            // ByteClubServerApp: so that `swift test` builds the `byteclub-server` binary the kill -9 test runs.
            dependencies: [
                "ByteClubServer",
                "ByteClubServerApp",
                "FerryTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
