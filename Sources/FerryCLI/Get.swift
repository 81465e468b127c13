import ArgumentParser
import Crypto
import Ferry
import FerryEngine
import Foundation

/// `ferry get URL`: one download to a file, resumable; or `--many LIST` of them.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download a URL to a file.",
        discussion: """
            The file is written in place. When a download stops early (Ctrl-C, a
            broken connection, a time-out), FILE keeps the bytes received, and
            FILE.ferry-resume records the URL and the resource's validator.
            `ferry get URL -o FILE --continue` then asks only for the rest
            (Range + If-Range). If the resource changed meanwhile, the server
            sends it whole and FILE is rewritten from the start.

            With --many LIST, each non-empty line of LIST is a URL, saved under
            --dir by its last path component, all through one session limited
            to --connections connections per host.

            Exit codes: see `ferry --help`.
            """)

    @Argument(help: "The http or https URL to download.")
    var url: String?

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write to this file (default: the URL's last path component, or index.html).", valueName: "file"))
    var output: String?

    @Flag(name: [.customShort("C"), .customLong("continue")], help: "Continue a partial download of the output file.")
    var resume = false

    @Option(help: ArgumentHelp("Fail (exit 65) unless the file has this SHA-256; a mismatching file is emptied.", valueName: "hex"))
    var sha256: String?

    @Option(help: ArgumentHelp("Download every URL listed in this file (one a line; - reads standard input).", valueName: "list"))
    var many: String?

    @Option(help: ArgumentHelp("With --many: the folder to write into.", valueName: "dir"))
    var dir: String = "."

    @Option(help: "With --many: connections per host (httpMaximumConnectionsPerHost).")
    var connections: Int = 6

    @Flag(help: "With --many: every URL through a Session, none through the faster batch (to compare).")
    var noBatch = false

    @Flag(help: "With --many: leave files already in the folder alone (ferry names a file only once it is whole, so a run that was stopped continues where it was).")
    var skipExisting = false

    @OptionGroup var options: TransferOptions

    func validate() throws {
        if let many {
            guard url == nil else { throw ValidationError("give either a URL or --many LIST, not both") }
            guard output == nil, !resume, sha256 == nil else {
                throw ValidationError("-o, --continue and --sha256 apply to a single URL, not to --many")
            }
            guard many == "-" || FileManager.default.isReadableFile(atPath: many) else { throw ValidationError("cannot read the list '\(many)'") }
            guard (1...64).contains(connections) else { throw ValidationError("--connections must be between 1 and 64") }
            return
        }
        guard !noBatch, !skipExisting else { throw ValidationError("--no-batch and --skip-existing apply to --many") }
        guard let url else { throw ValidationError("missing URL: ferry get URL [-o FILE]") }
        _ = try Check.url(url)
        if let sha256 { _ = try Check.sha256(sha256) }
        if let output, output.isEmpty { throw ValidationError("-o needs a file name") }
    }

    func run() async throws {
        if let many {
            try await GetMany(list: many, dir: dir, connections: connections, batch: !noBatch, skipExisting: skipExisting, options: options).run()
            return
        }
        guard let text = url else { throw ExitCode(ExitStatus.usage) }
        let source = try Check.url(text)
        let file = URL(fileURLWithPath: output ?? Check.defaultFileName(for: source))
        do {
            let summary = try await download(source, text: text, to: file)
            if options.json { JSONOutput.print(summary) }
        } catch let failure as CLIFailure {
            throw failure.report(url: text, json: options.json)
        }
    }

    struct Summary: Encodable {
        var url: String
        var status: Int
        var bytes: Int64
        var sha256: String?
        var file: String
        var seconds: Double
        var resumedFrom: Int64?
    }

    private func download(_ source: URL, text: String, to file: URL) async throws -> Summary {
        let started = ContinuousClock.now
        let existedBefore = FileManager.default.fileExists(atPath: file.path)
        let resumePoint = resume ? continuation(of: text, file: file) : nil
        if !resume { ResumeRecord.remove(for: file) }

        var request = Request(url: source, headers: try Check.headers(options.headers))
        request.expectedSHA256 = try sha256.map(Check.sha256)
        let transfer = Transfer(
            request: request, destination: .file(file, resume: resumePoint),
            resourceTimeout: options.maxTime, idleTimeout: options.timeout, retry: options.retryPolicy)
        let bar = ProgressBar(label: file.lastPathComponent, enabled: !options.quiet)
        let observer = CLIObserver(bar: bar, refuseErrorStatuses: true)

        let outcome = try await runInterruptibly(transfer, observer: observer, options: options)
        let seen = observer.snapshot
        switch outcome {
        case .success(let result):
            bar.finish(done: result.bytesReceived, total: result.bytesReceived)
            ResumeRecord.remove(for: file)
            if !existedBefore { applyDefaultMode(file) }
            let digest: String? = if let sha256 { sha256.lowercased() } else if options.json { try? Self.sha256(of: file) } else { nil }
            return Summary(
                url: Redact.url(text), status: result.response.statusCode, bytes: result.bytesReceived, sha256: digest,
                file: file.path, seconds: ProgressBar.seconds(ContinuousClock.now - started),
                resumedFrom: seen.resumedFrom.flatMap { $0 > 0 ? $0 : nil })
        case .failure(let error):
            bar.stop()
            let onDisk = sizeOfFile(file) ?? 0
            if let status = seen.refusedStatus {
                // Nothing of the error page was written; do not leave an empty file we made.
                if !existedBefore, onDisk == 0 { try? FileManager.default.removeItem(at: file) }
                throw CLIFailure.http(status)
            }
            let validator = seen.validator ?? resumePoint?.validator
            if let validator, onDisk > 0, error.code != .integrityCheckFailed {
                try? ResumeRecord(url: text, validator: validator, bytes: onDisk).save(for: file)
                options.note("kept \(ProgressBar.bytes(onDisk)) in \(file.path); continue with: ferry get URL -o \(file.path) --continue")
            } else if !existedBefore, onDisk == 0 {
                try? FileManager.default.removeItem(at: file)
            }
            if error.code == .cancelled { throw CLIFailure.interrupted }
            throw CLIFailure(error)
        }
    }

    /// Where `--continue` starts: the file's size and the recorded validator, or nil (from zero).
    private func continuation(of text: String, file: URL) -> ResumePoint? {
        guard let size = sizeOfFile(file), size > 0 else {
            options.note("nothing to continue in \(file.path); downloading from the start")
            return nil
        }
        guard let record = ResumeRecord.load(for: file) else {
            options.note("no resume record \(ResumeRecord.location(for: file).lastPathComponent); downloading from the start")
            return nil
        }
        guard record.url == text else {
            options.note("\(file.lastPathComponent) was downloaded from another URL; downloading from the start")
            return nil
        }
        options.note("continuing \(file.lastPathComponent) from byte \(size)")
        return ResumePoint(offset: size, validator: record.validator)
    }

    static func sha256(of file: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        var rounds = 0
        while rounds < Int.max {
            rounds += 1
            guard let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty else { break }
            hasher.update(data: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
