import ArgumentParser
import Ferry
import FerryEngine
import Foundation

/// `ferry put FILE URL`: one upload, streamed from disk.
struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Upload a file; print the server's response body.",
        discussion: """
            The file is streamed from disk: memory stays flat whatever its size.
            Bodies of 1 MiB or more use the IETF resumable-upload protocol when
            the server speaks it, so --retries continues an interrupted upload
            instead of restarting it. On an HTTP status of 400 or more, the
            body goes to standard error and ferry exits with 22.

            Exit codes: see `ferry --help`.
            """)

    enum Method: String, ExpressibleByArgument, CaseIterable {
        case PUT, POST
        init?(argument: String) { self.init(rawValue: argument.uppercased()) }
    }

    @Argument(help: "The file to upload.")
    var file: String

    @Argument(help: "The http or https URL to upload to.")
    var url: String

    @Option(name: [.customShort("X"), .long], help: "PUT or POST.")
    var method: Method = .PUT

    @OptionGroup var options: TransferOptions

    func validate() throws {
        _ = try Check.url(url)
        guard !file.isEmpty else { throw ValidationError("FILE must not be empty") }
    }

    struct Summary: Encodable {
        var url: String
        var status: Int
        var bytes: Int64
        var sha256: String?
        var file: String
        var seconds: Double
        var response: String?
    }

    func run() async throws {
        let target = try Check.url(url)
        let source = URL(fileURLWithPath: file)
        do {
            try await upload(source, to: target)
        } catch let failure as CLIFailure {
            throw failure.report(url: url, json: options.json)
        }
    }

    private func upload(_ source: URL, to target: URL) async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory) else {
            throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "fileDoesNotExist", message: "\(file): no such file")
        }
        guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: source.path) else {
            throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "cannotReadFile", message: "\(file): not a readable file")
        }
        let started = ContinuousClock.now
        let request = Request(url: target, method: method.rawValue, headers: try Check.headers(options.headers))
        let transfer = Transfer(
            request: request, upload: .file(source), destination: .memory(limit: 64 << 20),
            resourceTimeout: options.maxTime, idleTimeout: options.timeout, retry: options.retryPolicy)
        let bar = ProgressBar(label: source.lastPathComponent, enabled: !options.quiet)
        let observer = CLIObserver(bar: bar, refuseErrorStatuses: false)
        let outcome = try await runInterruptibly(transfer, observer: observer, options: options)
        switch outcome {
        case .failure(let error):
            bar.stop()
            throw error.code == .cancelled ? CLIFailure.interrupted : CLIFailure(error)
        case .success(let result):
            bar.finish(done: result.bytesSent, total: result.bytesSent)
            let body = result.body ?? Data()
            let status = result.response.statusCode
            if status >= 400 {
                if !body.isEmpty, !options.quiet {
                    Console.error(String(decoding: body.prefix(2048), as: UTF8.self))
                }
                throw CLIFailure.http(status)
            }
            if options.json {
                JSONOutput.print(Summary(
                    url: Redact.url(url), status: status, bytes: result.bytesSent, sha256: try? Get.sha256(of: source), file: source.path,
                    seconds: ProgressBar.seconds(ContinuousClock.now - started),
                    response: String(data: body, encoding: .utf8)))
            } else if !body.isEmpty {
                Console.outRaw(body)
            }
        }
    }
}
