import ArgumentParser
import Foundation
import Logging

/// `ferry`: downloads and uploads over HTTP with Ferry, from the shell.
@main
struct FerryTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry",
        abstract: "Download and upload files over HTTP(S) with Ferry.",
        discussion: """
            Progress goes to standard error (a bar on a terminal, plain lines otherwise);
            results go to standard output. Messages never show a URL's query string or a
            header's value.

            Exit codes (numbers follow curl's where curl has one):
              0   success
              1   any other failure
              2   bad usage: unknown option, bad URL, bad header, bad --sha256
              6   the host name did not resolve
              7   could not connect (connection refused, unreachable)
              8   the server's answer is not valid HTTP
              18  the connection broke before the transfer was complete
              22  the server answered with an HTTP status of 400 or more
              23  the output file cannot be written
              26  the input file is missing or cannot be read
              28  timed out (--timeout, --max-time)
              35  TLS failed
              47  too many redirects
              60  the server's certificate is not trusted
              63  a response body was larger than allowed
              65  integrity check failed (--sha256, or the server's Repr-Digest)
              130 interrupted (Ctrl-C); `ferry get --continue` picks the download up
            """,
        version: "0.1.0",
        subcommands: [Get.self, Put.self, Apps.self, Share.self, Upload.self, Download.self, List.self, Watch.self, Explain.self, Pause.self, Resume.self, Cancel.self, Daemon.self]
    )

    /// As `AsyncParsableCommand.main()`, except that usage errors (including `validate()`
    /// failures such as a bad URL) exit with 2, the Unix convention, rather than 64.
    static func main() async {
        // Writing past RLIMIT_FSIZE must fail the write (EFBIG, reported as cannotWriteToFile)
        // as a full disk does, not kill ferry halfway through a list.
        signal(SIGXFSZ, SIG_IGN)
        LoggingSystem.bootstrap(CLILog.handler)
        do {
            var command = try await asyncParseAsRoot(nil)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                Console.error(fullMessage(for: error))
                Foundation.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

/// The library's log lines in a terminal: the CLI reports what matters itself (a retry, a
/// resume, an error), so by default only warnings and errors from the library reach stderr;
/// `FERRY_LOG=info` (or `debug`, `trace`) shows more. Never stdout: that is for `--json`.
enum CLILog {
    static let level: Logger.Level = ProcessInfo.processInfo.environment["FERRY_LOG"]
        .flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .warning

    @Sendable static func handler(label: String) -> any LogHandler {
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}
