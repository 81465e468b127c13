import ArgumentParser
import Ferry
import Foundation

/// The exit statuses `ferry` uses (see `ferry --help`).
enum ExitStatus {
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    static let cannotResolve: Int32 = 6
    static let cannotConnect: Int32 = 7
    static let badResponse: Int32 = 8
    static let partial: Int32 = 18
    static let httpError: Int32 = 22
    static let cannotWrite: Int32 = 23
    static let cannotRead: Int32 = 26
    static let timedOut: Int32 = 28
    static let tls: Int32 = 35
    static let tooManyRedirects: Int32 = 47
    static let untrusted: Int32 = 60
    static let tooLarge: Int32 = 63
    static let integrity: Int32 = 65
    static let interrupted: Int32 = 130
}

/// A failure to report: what the user reads, what a script switches on, how `ferry` exits.
struct CLIFailure: Error {
    var exitStatus: Int32
    /// Machine-readable: a `FerryError.Code` name, `httpError` or `interrupted`.
    var code: String
    var message: String
    /// The HTTP status, for `httpError`.
    var status: Int?

    static func http(_ status: Int) -> CLIFailure {
        CLIFailure(exitStatus: ExitStatus.httpError, code: "httpError", message: "the server answered HTTP \(status) \(reason(status))", status: status)
    }

    static let interrupted = CLIFailure(exitStatus: ExitStatus.interrupted, code: "interrupted", message: "interrupted")

    /// A transfer error as a failure. `FerryError.message` names hosts, never queries.
    init(_ error: FerryError) {
        self.code = error.code.description
        self.message = Self.plainMessage(error)
        self.status = nil
        switch error.code {
        case .badURL, .unsupportedURL: exitStatus = ExitStatus.usage
        case .cannotFindHost: exitStatus = ExitStatus.cannotResolve
        case .cannotConnectToHost, .notConnectedToInternet: exitStatus = ExitStatus.cannotConnect
        case .badServerResponse: exitStatus = ExitStatus.badResponse
        case .networkConnectionLost: exitStatus = ExitStatus.partial
        case .cannotWriteToFile: exitStatus = ExitStatus.cannotWrite
        case .fileDoesNotExist, .cannotReadFile: exitStatus = ExitStatus.cannotRead
        case .timedOut: exitStatus = ExitStatus.timedOut
        case .secureConnectionFailed: exitStatus = ExitStatus.tls
        case .httpTooManyRedirects: exitStatus = ExitStatus.tooManyRedirects
        case .serverCertificateUntrusted: exitStatus = ExitStatus.untrusted
        case .dataLengthExceedsMaximum: exitStatus = ExitStatus.tooLarge
        case .integrityCheckFailed: exitStatus = ExitStatus.integrity
        case .cancelled: exitStatus = ExitStatus.interrupted
        default: exitStatus = ExitStatus.failure
        }
    }

    init(exitStatus: Int32, code: String, message: String, status: Int? = nil) {
        self.exitStatus = exitStatus
        self.code = code
        self.message = message
        self.status = status
    }

    /// Tells the user (stderr, or one JSON object on stdout) and returns the exit code to throw.
    func report(url: String?, json: Bool) -> ExitCode {
        var line = "ferry: \(message)"
        if let url { line += " (\(Redact.url(url)))" }
        Console.error(line)
        if json {
            JSONOutput.print(ErrorReport(error: .init(code: code, message: message, status: status, url: url.map(Redact.url), exitCode: exitStatus)))
        }
        return ExitCode(exitStatus)
    }

    /// The engine's message, made shorter where the OS's words are noisy.
    static func plainMessage(_ error: FerryError) -> String {
        guard error.code == .cannotConnectToHost, let url = error.failingURL else { return error.message }
        let cause = error.underlyingError.map { "\($0)" } ?? error.message
        let place = "\(url.host ?? "the host"):\(url.port.map(String.init) ?? (url.scheme == "https" ? "443" : "80"))"
        if cause.contains("refused") { return "could not connect to \(place): connection refused" }
        if cause.contains("unreachable") { return "could not connect to \(place): unreachable" }
        return "could not connect to \(place)"
    }

    static func reason(_ status: Int) -> String {
        let known: [Int: String] = [
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed",
            413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
            422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 507: "Insufficient Storage",
        ]
        return known[status] ?? ""
    }
}

struct ErrorReport: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
        var status: Int?
        var url: String?
        var exitCode: Int32
    }
    var error: Body
}

enum JSONOutput {
    static func print<T: Encodable>(_ value: T) {
        guard let data = encoded(value) else { return }
        Console.out(String(decoding: data, as: UTF8.self))
    }

    /// One value as the CLI writes JSON: compact, keys sorted, dates in ISO 8601.
    static func encoded<T: Encodable>(_ value: T) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try? encoder.encode(value)
    }
}

/// Keeps secrets out of messages: URLs lose their query, user and password.
enum Redact {
    static func url(_ text: String) -> String {
        if var components = URLComponents(string: text), components.scheme != nil {
            let hadQuery = components.query != nil
            components.user = nil
            components.password = nil
            components.query = nil
            components.fragment = nil
            if let shown = components.string { return shown + (hadQuery ? "?…" : "") }
        }
        // Not parseable: cut at the query and drop anything that looks like user info.
        var cut = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? text
        if cut.count < text.count { cut += "?…" }
        if let at = cut.firstIndex(of: "@"), let scheme = cut.range(of: "://"), scheme.upperBound <= at {
            cut.replaceSubrange(scheme.upperBound...at, with: "")
        }
        return cut
    }
}
