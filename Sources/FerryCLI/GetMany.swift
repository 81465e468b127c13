import FerryCore
import ArgumentParser
import Ferry
import FerryBatch
import FerryEngine
import Foundation
import Synchronization

/// `ferry get --many LIST --dir DIR --connections N`: many downloads over N connections per
/// host (the benchmark's small-file case): a `BatchDownload` first, a `Session` for the rest.
struct GetMany {
    let list: String
    let dir: String
    let connections: Int
    /// Plain downloads through a `BatchDownload` first (false: all through the session).
    let batch: Bool
    /// Files already in the folder are left alone (they were only ever named when whole).
    let skipExisting: Bool
    let options: TransferOptions

    struct Summary: Encodable {
        var files: Int
        var skipped: Int
        var failed: Int
        var bytes: Int64
        var seconds: Double
        var dir: String
        /// Every download that failed, by its line in the list (the URL is shown redacted).
        var failures: [Failed]
    }

    struct Failed: Encodable {
        var line: Int
        var url: String
        var code: String
        var status: Int?
        var message: String
    }

    func run() async throws {
        let entries: [ListEntry]
        do {
            entries = try readList()
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: options.json)
        }
        let folder = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.cannotWrite, code: "cannotWriteToFile", message: "cannot create \(dir)").report(url: nil, json: options.json)
        }

        IncomingFolder.removeStale(in: folder)
        var lineOf: [URL: Int] = [:]
        for entry in entries { lineOf[entry.url] = entry.line }
        let folderPath = folder.path  // once: a URL's path is decoded again at each call
        let listed = entries.map { BatchDownload.Item(url: $0.url, destination: folderPath + "/" + $0.name) }
        let items = skipExisting ? listed.filter { access($0.destination, F_OK) != 0 } : listed
        let skipped = listed.count - items.count
        let headers = try Check.headers(options.headers)
        let started = ContinuousClock.now
        let bar = ProgressBar(label: "\(items.count) files", enabled: !options.quiet, counting: .files)

        // Ctrl-C or SIGTERM stops the work cleanly: nothing partial is left, and the same
        // command with --skip-existing fetches the rest.
        let work = Task { await self.fetch(items, headers: headers, into: folder, bar: bar) }
        let interrupts = Interrupts { work.cancel() }
        let (bytes, failures, saved) = await work.value
        interrupts.remove()
        if interrupts.happened {
            bar.stop()
            Console.error("ferry: interrupted with \(saved) of \(items.count) files saved; the same command with --skip-existing fetches the rest")
            throw ExitCode(ExitStatus.interrupted)
        }
        bar.finish(done: bytes, total: bytes)
        for (url, failure) in failures.prefix(10) {
            Console.error("ferry: \(Redact.url(url.absoluteString)): \(failure.message)")
        }
        if options.json {
            let failed = failures.map { url, failure in
                Failed(line: lineOf[url] ?? 0, url: Redact.url(url.absoluteString), code: failure.code, status: failure.status, message: failure.message)
            }.sorted { $0.line < $1.line }
            JSONOutput.print(Summary(files: items.count - failures.count, skipped: skipped, failed: failures.count, bytes: bytes,
                                     seconds: ProgressBar.seconds(ContinuousClock.now - started), dir: folder.path, failures: failed))
        }
        if let first = failures.first {
            Console.error("ferry: \(failures.count) of \(items.count) downloads failed")
            throw ExitCode(first.1.exitStatus)
        }
    }

    /// The batch for the plain cases (kept-alive connections on the event loops), then a
    /// session for what it hands back (redirects, broken connections).
    /// Bytes and files saved, and the failures.
    private func fetch(_ items: [BatchDownload.Item], headers: HeaderFields, into folder: URL, bar: ProgressBar) async -> (Int64, [(URL, CLIFailure)], Int) {
        var batch = BatchDownload()
        batch.connectionsPerHost = connections
        batch.headers = headers
        batch.idleTimeout = .seconds(options.timeout)
        batch.resourceTimeout = options.maxTime.map { .seconds($0) }
        batch.handsBackTimeouts = options.retryPolicy.maximumAttempts > 1
        batch.retryPolicy = options.retryPolicy  // 429/503 are asked again in the batch, after Retry-After
        let finishedCount = Counter()
        let total = Int64(items.count)
        let tick: @Sendable () -> Void = { bar.update(done: Int64(finishedCount.increment()), total: total) }

        // What the batch hands back goes to the session at once, while the batch goes on.
        let (handedBack, toSession) = AsyncStream.makeStream(of: BatchDownload.Item.self)
        async let fromSession = fetchWithSession(handedBack, headers: headers, into: folder, onEach: tick)
        let outcomes: [BatchDownload.Outcome]
        // The batch does not look at the network: with a network option, everything goes
        // through the session, whose tasks do.
        if self.batch, options.connectivity == nil {
            outcomes = await batch.run(items) { index, outcome in
                if case .handedBack = outcome { toSession.yield(items[index]) } else { tick() }
            }
        } else {
            for item in items { toSession.yield(item) }
            outcomes = items.map { _ in .handedBack("--no-batch") }
        }
        toSession.finish()

        var failures: [(URL, CLIFailure)] = []
        var bytes: Int64 = 0
        var saved = 0
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .saved(let size):
                bytes += size
                saved += 1
            case .answered(let status): failures.append((item.url, .http(status)))
            case .failed(let error): failures.append((item.url, CLIFailure(error)))
            case .handedBack: break
            }
        }
        let session = await fromSession
        return (bytes + session.bytes, failures + session.failures, saved + session.saved)
    }

    /// Downloads through a `Session` (redirects, retries, TLS, HTTP/2) the URLs as they come,
    /// a few requests queued per connection at a time; the session is made for the first.
    private func fetchWithSession(_ items: AsyncStream<BatchDownload.Item>, headers: HeaderFields, into folder: URL,
                                  onEach: @escaping @Sendable () -> Void) async -> (bytes: Int64, failures: [(URL, CLIFailure)], saved: Int) {
        var failures: [(URL, CLIFailure)] = []
        var bytes: Int64 = 0
        var saved = 0
        var session: Session?
        // Partial files in a hidden folder of this run's, on DIR's file system (the final move
        // is a rename); removed at the end, and by a later run if this one is killed.
        var partials: IncomingFolder?
        defer {
            session?.finishTasksAndInvalidate()
            partials?.remove()
        }
        let window = connections * 4
        await withTaskGroup(of: (URL, Result<Int64, CLIFailure>).self) { group in
            var running = 0
            func record(_ url: URL, _ result: Result<Int64, CLIFailure>) {
                switch result {
                case .success(let size):
                    bytes += size
                    saved += 1
                case .failure(let failure): failures.append((url, failure))
                }
                onEach()
                running -= 1
            }
            for await item in items {
                if session == nil {
                    var configuration = Configuration.ephemeral
                    configuration.httpMaximumConnectionsPerHost = connections
                    configuration.timeoutIntervalForRequest = options.timeout
                    if let maxTime = options.maxTime { configuration.timeoutIntervalForResource = maxTime }
                    configuration.retryPolicy = options.retryPolicy
                    configuration.networkAccess = options.networkAccess
                    let made = IncomingFolder(in: folder)
                    configuration.downloadDirectory = made.url
                    partials = made
                    session = Session(configuration: configuration, delegate: configuration.waitsForConnectivity ? NetworkWaitNotes(options: options) : nil)
                }
                if running >= window, let (done, result) = await group.next() { record(done, result) }
                let current = session!
                group.addTask { (item.url, await Self.fetch(item, headers: headers, session: current)) }
                running += 1
            }
            for await (url, result) in group { record(url, result) }
        }
        return (bytes, failures, saved)
    }

    private static func fetch(_ item: BatchDownload.Item, headers: HeaderFields, session: Session) async -> Result<Int64, CLIFailure> {
        let (url, target) = (item.url, item.destination)
        do {
            let (temporary, response) = try await session.download(for: Request(url: url, headers: headers))
            guard response.statusCode < 400 else {
                try? FileManager.default.removeItem(at: temporary)
                return .failure(.http(response.statusCode))
            }
            // Plain path strings: Foundation's URL path operations cost more than the rename.
            guard rename(temporary.path, target) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                return .failure(CLIFailure(exitStatus: ExitStatus.cannotWrite, code: "cannotWriteToFile", message: "cannot move the download to \(target)"))
            }
            var info = stat()
            let size = stat(target, &info) == 0 ? Int64(info.st_size) : 0
            chmod(target, defaultFileMode)
            return .success(size)
        } catch let error as FerryError {
            return .failure(CLIFailure(error))
        } catch {
            return .failure(CLIFailure(FerryError.from(error, url: url)))
        }
    }

    /// The line without blanks around it (Foundation's trimming is slower than the download
    /// of a small file when the list has thousands of lines).
    static func trimmed(_ line: Substring) -> String {
        Blanks.innerRange(of: line.utf8).map { String(line[$0]) } ?? ""
    }

    /// How messages name the list.
    private var listName: String { list == "-" ? "standard input" : list }

    /// A URL of the list, its line (1-based) and the name it is saved under.
    struct ListEntry {
        var url: URL
        var line: Int
        var name: String
    }

    private func readList() throws -> [ListEntry] {
        let contents = list == "-"
            ? String(data: FileHandle.standardInput.readDataToEndOfFile(), encoding: .utf8)
            : try? String(contentsOfFile: list, encoding: .utf8)
        guard let text = contents else {
            throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "cannotReadFile", message: "cannot read the list \(listName)")
        }
        var urls: [ListEntry] = []
        // Two URLs saved under one name: the second would replace the first (the same URL
        // twice is fetched once).
        var lineOfName: [String: (line: Int, url: URL)] = [:]
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = Self.trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let url: URL
            do {
                url = try Check.url(line)
            } catch {
                throw CLIFailure(exitStatus: ExitStatus.usage, code: "badURL", message: "\(listName):\(number + 1): \(error)")
            }
            let name = Check.defaultFileName(for: url)
            if let first = lineOfName[name] {
                if first.url == url { continue }
                throw CLIFailure(
                    exitStatus: ExitStatus.usage, code: "badURL",
                    message: "\(listName):\(first.line + 1) and \(listName):\(number + 1) would both be saved as \(name); give them separate lists or folders")
            }
            lineOfName[name] = (number, url)
            urls.append(ListEntry(url: url, line: number + 1, name: name))
        }
        return urls
    }
}

/// `DIR/.ferry-partial-<pid>`: where a session's downloads are written until whole. A folder
/// left by a run that was killed (its process is gone) is removed by the next run into DIR.
struct IncomingFolder {
    let url: URL

    init(in folder: URL) {
        url = folder.appendingPathComponent(".ferry-partial-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Removes the folders of runs whose process no longer exists.
    static func removeStale(in folder: URL) {
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasPrefix(".ferry-partial-") {
            guard let pid = pid_t(name.dropFirst(".ferry-partial-".count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? fm.removeItem(at: folder.appendingPathComponent(name))
        }
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Says when a task waits for the network (`--wait-for-network`), once per task.
private final class NetworkWaitNotes: SessionDelegate {
    let options: TransferOptions
    init(options: TransferOptions) { self.options = options }

    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) async {
        options.note("waiting for the network: \(task.waitingReason?.message ?? "no network") (\(task.originalRequest.url.redactedForLogs))")
    }
}

/// Files finished so far, counted from the batch's event loop and the session's tasks.
private final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
}
