import Foundation
import Hummingbird
import Logging
import Synchronization

/// What every route shares: configuration, the store, the blobs, and the in-memory counters
/// (rate limits, injected faults). One per running server.
final class ServerState: Sendable {
    let configuration: ByteClubConfiguration
    let store: any MetadataStore
    let blobs: BlobStore
    let fileIO = FileIO()
    let logger: Logger
    let rateLimiter: RateLimiter
    let faults: FaultState
    /// Connections whose client closed its side, for long-polls to stop waiting for them.
    let closedInputs = ClosedInputs()
    private let boundURL = Mutex<String?>(nil)

    init(configuration: ByteClubConfiguration, logger: Logger) async throws {
        self.configuration = configuration
        self.logger = logger
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        blobs = try BlobStore(root: configuration.dataDirectory + "/files")
        store = try await StoreLocation(configuration).open(longPollWaiterLimit: configuration.longPollWaiterLimit, logger: logger)
        rateLimiter = RateLimiter(clientLimit: configuration.clientRateLimit, userLimit: configuration.userRateLimit,
                                  window: configuration.rateLimitWindow)
        faults = FaultState(configuration.faults)
    }

    /// The base of links the server hands out: the configured public URL, else the bound address.
    var baseURL: String {
        if let url = configuration.publicURL { return url.hasSuffix("/") ? String(url.dropLast()) : url }
        return boundURL.withLock { $0 } ?? "http://\(configuration.host):\(configuration.port)"
    }

    func setBound(host: String, port: Int) {
        let shown = host.contains(":") ? "[\(host)]" : host
        boundURL.withLock { $0 = "http://\(shown):\(port)" }
    }

    /// Start-up cleaning of files a crash left behind (see ``BlobStore/clean(referenced:)``).
    func cleanOrphans() async throws -> Int {
        blobs.clean(referenced: try await store.referencedBlobs())
    }

    /// Lower-case letters and digits from the system's secure generator.
    static func randomToken(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<(bytes * 2)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }
}
