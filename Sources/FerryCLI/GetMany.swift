import ArgumentParser
import Ferry
import FerryEngine
import Foundation

/// `ferry get --many LIST --dir DIR --connections N`: many downloads through one `Session`
/// whose `httpMaximumConnectionsPerHost` is N (the benchmark's small-file case).
struct GetMany {
    let list: String
    let dir: String
    let connections: Int
    let options: TransferOptions

    struct Summary: Encodable {
        var files: Int
        var failed: Int
        var bytes: Int64
        var seconds: Double
        var dir: String
    }

    func run() async throws {
        let urls: [URL]
        do {
            urls = try readList()
        } catch let failure as CLIFailure {
            throw failure.report(url: nil, json: options.json)
        }
        let folder = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw CLIFailure(exitStatus: ExitStatus.cannotWrite, code: "cannotWriteToFile", message: "cannot create \(dir)").report(url: nil, json: options.json)
        }

        var configuration = Configuration.ephemeral
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.timeoutIntervalForRequest = options.timeout
        if let maxTime = options.maxTime { configuration.timeoutIntervalForResource = maxTime }
        configuration.retryPolicy = options.retryPolicy
        configuration.downloadDirectory = folder  // same file system: the final move is a rename
        let session = Session(configuration: configuration)
        let headers = try Check.headers(options.headers)
        let started = ContinuousClock.now
        let bar = ProgressBar(label: "\(urls.count) files", enabled: !options.quiet)

        // A sliding window keeps a few requests queued per connection, not all of them at once.
        let window = connections * 4
        var done = 0
        var failures: [(URL, CLIFailure)] = []
        var bytes: Int64 = 0
        await withTaskGroup(of: (URL, Result<Int64, CLIFailure>).self) { group in
            var next = 0
            func add() {
                let url = urls[next]
                next += 1
                group.addTask { (url, await Self.fetch(url, headers: headers, into: folder, session: session)) }
            }
            while next < urls.count, next < window { add() }
            for await (url, result) in group {
                done += 1
                switch result {
                case .success(let size): bytes += size
                case .failure(let failure): failures.append((url, failure))
                }
                bar.update(done: Int64(done), total: Int64(urls.count))
                if next < urls.count { add() }
            }
        }
        session.finishTasksAndInvalidate()
        bar.finish(done: bytes, total: bytes)
        for (url, failure) in failures.prefix(10) {
            Console.error("ferry: \(Redact.url(url.absoluteString)): \(failure.message)")
        }
        if options.json {
            JSONOutput.print(Summary(files: urls.count - failures.count, failed: failures.count, bytes: bytes,
                                     seconds: ProgressBar.seconds(ContinuousClock.now - started), dir: folder.path))
        }
        if let first = failures.first {
            Console.error("ferry: \(failures.count) of \(urls.count) downloads failed")
            throw ExitCode(first.1.exitStatus)
        }
    }

    private static func fetch(_ url: URL, headers: HeaderFields, into folder: URL, session: Session) async -> Result<Int64, CLIFailure> {
        do {
            let (temporary, response) = try await session.download(for: Request(url: url, headers: headers))
            guard response.statusCode < 400 else {
                try? FileManager.default.removeItem(at: temporary)
                return .failure(.http(response.statusCode))
            }
            // Plain path strings: Foundation's URL path operations cost more than the rename.
            let target = folder.path + "/" + Check.defaultFileName(for: url)
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

    private func readList() throws -> [URL] {
        guard let text = try? String(contentsOfFile: list, encoding: .utf8) else {
            throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "cannotReadFile", message: "cannot read the list \(list)")
        }
        var urls: [URL] = []
        for (number, raw) in text.split(whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            do {
                urls.append(try Check.url(line))
            } catch {
                throw CLIFailure(exitStatus: ExitStatus.usage, code: "badURL", message: "\(list):\(number + 1): \(error)")
            }
        }
        return urls
    }
}
