import Crypto
import FerryApps
import FerryCore
public import FerryEngine
public import Foundation
import Logging
import Synchronization

/// Responses kept for later, in URLSession's spelling: `.default` sessions use ``shared`` (in
/// memory and on disk), `.ephemeral` ones a cache of their own in memory only. What may be
/// kept and when an entry answers a request follow HTTP (RFC 9111 for a private cache:
/// `Cache-Control`, `Expires`, revalidation with `ETag` and `Last-Modified`), decided by
/// Ferry's engine; only `GET` data tasks use it.
///
/// ```swift
/// let cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 64 << 20, directory: cachesFolder)
/// let configuration = URLSessionConfiguration.default
/// configuration.urlCache = cache
/// configuration.requestCachePolicy = .returnCacheDataElseLoad   // offline first
/// ```
///
/// ``shared`` keeps its files in `$XDG_CACHE_HOME/ferry/URLCache/<app>` (`~/.cache/…`). An
/// entry larger than a twentieth of a capacity is not kept there; past a capacity, the least
/// recently used entries go first.
public final class URLCache: Sendable, ResponseCache {
    /// How a response may be kept.
    public enum StoragePolicy: UInt, Sendable {
        case allowed = 0
        case allowedInMemoryOnly = 1
        case notAllowed = 2
    }

    public let memoryCapacity: Int
    public let diskCapacity: Int
    /// The folder, found once (``shared``'s asks which app this is: not on every request).
    private let folder: FoundOnce<URL?>

    private struct State {
        var memory: [String: (entry: StoredEntry, used: UInt64)] = [:]
        var memoryUsage = 0
        var clock: UInt64 = 0
    }
    private let state = Mutex(State())
    private let diskLock = Mutex(())

    /// A cache with these capacities (bytes); on disk in `directory`, or in memory only when nil.
    public init(memoryCapacity: Int, diskCapacity: Int, directory: URL? = nil) {
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = directory == nil ? 0 : max(0, diskCapacity)
        self.folder = FoundOnce { directory }
    }

    private init(memoryCapacity: Int, diskCapacity: Int, lazyDirectory: @escaping @Sendable () -> URL?) {
        self.memoryCapacity = memoryCapacity
        self.diskCapacity = diskCapacity
        self.folder = FoundOnce(lazyDirectory)
    }

    /// This app's cache: 4 MiB in memory, 64 MiB on disk.
    public static let shared = URLCache(memoryCapacity: 4 << 20, diskCapacity: 64 << 20, lazyDirectory: {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let base = environment["XDG_CACHE_HOME"].map { URL(fileURLWithPath: $0) } ?? URL(fileURLWithPath: home).appendingPathComponent(".cache")
        return base.appendingPathComponent("ferry/URLCache/\(ThisApp.fileName(environment: environment))", isDirectory: true)
    })

    public var currentMemoryUsage: Int { state.withLock { $0.memoryUsage } }

    public var currentDiskUsage: Int {
        diskLock.withLock { _ in diskFiles().reduce(0) { $0 + $1.size } }
    }

    // MARK: URLSession's calls

    public func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        request.request.flatMap { entry(for: $0) }.map(CachedURLResponse.init)
    }

    public func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard cachedResponse.storagePolicy != .notAllowed, let request = request.request,
            let response = (cachedResponse.response as? HTTPURLResponse)?.response
        else { return }
        keep(StoredEntry(CachedResponse(response: response, body: cachedResponse.data, requestDate: Date(), responseDate: Date()), request: request),
             onDisk: cachedResponse.storagePolicy == .allowed)
    }

    public func removeCachedResponse(for request: URLRequest) {
        if let request = request.request { removeEntry(for: request) }
    }

    public func removeAllCachedResponses() {
        state.withLock { $0.memory = [:]; $0.memoryUsage = 0 }
        diskLock.withLock { _ in for file in diskFiles() { try? FileManager.default.removeItem(at: file.url) } }
    }

    public func removeCachedResponses(since date: Date) {
        state.withLock { state in
            for (key, value) in state.memory where value.entry.cached.responseDate >= date {
                state.memory[key] = nil
                state.memoryUsage -= value.entry.size
            }
        }
        diskLock.withLock { _ in for file in diskFiles() where file.modified >= date { try? FileManager.default.removeItem(at: file.url) } }
    }

    // MARK: For the engine

    public func entry(for request: Request) -> CachedResponse? {
        let key = Self.key(request.url)
        let remembered = state.withLock { state -> StoredEntry? in
            guard let found = state.memory[key] else { return nil }
            state.clock += 1
            state.memory[key]?.used = state.clock
            return found.entry
        }
        let stored = remembered ?? diskLock.withLock { _ in readFromDisk(key) }
        guard let stored, stored.matches(request) else { return nil }
        if remembered == nil { remember(stored) }
        return stored.cached
    }

    public func store(_ entry: CachedResponse, for request: Request) {
        keep(StoredEntry(entry, request: request), onDisk: true)
    }

    public func removeEntry(for request: Request) {
        let key = Self.key(request.url)
        state.withLock { state in
            if let old = state.memory.removeValue(forKey: key) { state.memoryUsage -= old.entry.size }
        }
        diskLock.withLock { _ in if let file = file(for: key) { try? FileManager.default.removeItem(at: file) } }
    }

    // MARK: Keeping

    private func keep(_ stored: StoredEntry, onDisk: Bool) {
        remember(stored)
        guard let file = file(for: stored.key) else { return }
        guard onDisk, diskCapacity > 0, stored.size <= diskCapacity / 20 else {
            // Not kept there: an older answer for the key must not outlive this one.
            diskLock.withLock { _ in try? FileManager.default.removeItem(at: file) }
            return
        }
        diskLock.withLock { _ in
            do {
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                try PrivateFile.replace(file, with: try JSONEncoder().encode(stored), sync: false)
                // Least recently written first, until the files fit.
                var files = diskFiles().sorted { $0.modified < $1.modified }
                var usage = files.reduce(0) { $0 + $1.size }
                while usage > diskCapacity, let oldest = files.first {
                    try? FileManager.default.removeItem(at: oldest.url)
                    usage -= oldest.size
                    files.removeFirst()
                }
            } catch {
                Logger(label: "ferry.cache").notice("cannot keep a response on disk", metadata: ["error": "\(error)"])
            }
        }
    }

    private func remember(_ stored: StoredEntry) {
        state.withLock { state in
            guard stored.size <= memoryCapacity / 20 else {
                // Too large to keep in memory: an older answer for the key goes too.
                if let old = state.memory.removeValue(forKey: stored.key) { state.memoryUsage -= old.entry.size }
                return
            }
            state.clock += 1
            if let old = state.memory.updateValue((stored, state.clock), forKey: stored.key) { state.memoryUsage -= old.entry.size }
            state.memoryUsage += stored.size
            while state.memoryUsage > memoryCapacity, let oldest = state.memory.min(by: { $0.value.used < $1.value.used }) {
                state.memory[oldest.key] = nil
                state.memoryUsage -= oldest.value.entry.size
            }
        }
    }

    private static func key(_ url: URL) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        components?.fragment = nil
        return components?.string ?? url.absoluteString
    }

    private func directory() -> URL? { folder.value }

    private func file(for key: String) -> URL? {
        directory().map { $0.appendingPathComponent(SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined() + ".entry") }
    }

    private func readFromDisk(_ key: String) -> StoredEntry? {
        guard let file = file(for: key), let data = try? Data(contentsOf: file) else { return nil }
        guard let stored = try? JSONDecoder().decode(StoredEntry.self, from: data), stored.key == key else {
            try? FileManager.default.removeItem(at: file)  // damaged or a collision: not an answer
            return nil
        }
        return stored
    }

    private func diskFiles() -> [(url: URL, size: Int, modified: Date)] {
        guard let directory = directory(),
            let names = try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.fileSizeKey, .contentModificationDateKey])
        else { return [] }
        return names.filter { $0.pathExtension == "entry" }.map { url in
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .contentModificationDateKey])
            return (url, values?.fileSize ?? 0, values?.contentModificationDate ?? .distantPast)
        }
    }
}

/// A response and its body as URLSession's cache hands them out.
public final class CachedURLResponse: Sendable {
    public let response: URLResponse
    public let data: Data
    public let storagePolicy: URLCache.StoragePolicy

    public init(response: URLResponse, data: Data, storagePolicy: URLCache.StoragePolicy = .allowed) {
        self.response = response
        self.data = data
        self.storagePolicy = storagePolicy
    }

    convenience init(_ entry: CachedResponse) {
        self.init(response: HTTPURLResponse(entry.response), data: entry.body)
    }
}

/// An entry as the cache keeps it: the response, its body, its times, and the request's
/// values of the headers the response `Vary`s on (it answers only requests with the same).
private struct StoredEntry: Codable {
    var key: String
    var url: String
    var status: Int
    var headers: HeaderFields
    var httpVersion: String
    var body: Data
    var requestDate: Date
    var responseDate: Date
    var vary: [String: String]

    init(_ cached: CachedResponse, request: Request) {
        key = URLCache.keyForStorage(request.url)
        url = cached.response.url.absoluteString
        status = cached.response.statusCode
        headers = cached.response.headers
        httpVersion = cached.response.httpVersion
        body = cached.body
        requestDate = cached.requestDate
        responseDate = cached.responseDate
        let names = cached.response.headers.values(for: "Vary").flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        vary = Dictionary(names.map { ($0, request.headers[$0] ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    var size: Int { body.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count } + 256 }

    var cached: CachedResponse {
        CachedResponse(
            response: Response(url: URL(string: url) ?? URL(fileURLWithPath: "/"), statusCode: status, headers: headers, httpVersion: httpVersion),
            body: body, requestDate: requestDate, responseDate: responseDate)
    }

    func matches(_ request: Request) -> Bool {
        vary.allSatisfy { name, value in (request.headers[name] ?? "") == value }
    }
}

extension URLCache {
    fileprivate static func keyForStorage(_ url: URL) -> String { key(url) }
}
