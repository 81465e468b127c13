public import FerryCore
public import Foundation

/// An error from a transfer: a code you can switch on, the URL that failed, and the cause.
///
/// As with `URLSession`, an HTTP status such as 404 or 503 is a *response*, not an error:
/// a `FerryError` means the transfer itself could not be completed.
///
/// ```swift
/// do {
///     let (data, response) = try await session.data(for: request)
/// } catch let error as FerryError where error.code == .timedOut {
///     print("server too slow:", error.failingURL?.absoluteString ?? "?")
/// }
/// ```
public struct FerryError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in the words `URLError` uses.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The code with this name: a known one, or a new code carried as it is (codes
        /// reported by a newer ferryd stay readable).
        ///
        /// ```swift
        /// FerryError.Code(named: "timedOut") == .timedOut   // true
        /// ```
        public init(named name: String) { self.name = name }

        /// The task was cancelled by the app.
        public static let cancelled = Code("cancelled")
        /// No progress within `timeoutIntervalForRequest`, or the whole task outlived
        /// `timeoutIntervalForResource`.
        public static let timedOut = Code("timedOut")
        /// The URL is malformed or has no host.
        public static let badURL = Code("badURL")
        /// The scheme is not http or https.
        public static let unsupportedURL = Code("unsupportedURL")
        /// Nothing accepted the connection.
        public static let cannotConnectToHost = Code("cannotConnectToHost")
        /// The host name did not resolve.
        public static let cannotFindHost = Code("cannotFindHost")
        /// No network the session may use reaches the host, and the session does not wait for
        /// one (`waitsForConnectivity`): no link with a route to it, or only links its settings
        /// rule out (``FerryError/networkUnavailableReason`` says which).
        public static let notConnectedToInternet = Code("notConnectedToInternet")
        /// The connection broke in the middle of the transfer.
        public static let networkConnectionLost = Code("networkConnectionLost")
        /// The server sent something that is not valid HTTP, or a body that does not match
        /// its own framing (`Content-Length`, `Content-Range`).
        public static let badServerResponse = Code("badServerResponse")
        /// The redirect chain was longer than allowed or went round in a circle.
        public static let httpTooManyRedirects = Code("httpTooManyRedirects")
        /// TLS could not be established.
        public static let secureConnectionFailed = Code("secureConnectionFailed")
        /// The server's certificate is not trusted.
        public static let serverCertificateUntrusted = Code("serverCertificateUntrusted")
        /// The server asked for a client certificate and none was presented.
        public static let clientCertificateRequired = Code("clientCertificateRequired")
        /// The server refused the client certificate presented.
        public static let clientCertificateRejected = Code("clientCertificateRejected")
        /// The upload source file does not exist.
        public static let fileDoesNotExist = Code("fileDoesNotExist")
        /// A file could not be read.
        public static let cannotReadFile = Code("cannotReadFile")
        /// A file could not be created or written (disk full, permission, missing folder).
        public static let cannotWriteToFile = Code("cannotWriteToFile")
        /// A body was larger than the limit the caller set.
        public static let dataLengthExceedsMaximum = Code("dataLengthExceedsMaximum")
        /// The downloaded bytes do not match the expected SHA-256 or the server's digest.
        public static let integrityCheckFailed = Code("integrityCheckFailed")
        /// A gzip or deflate coded body is damaged, cut short, or decodes to more than 1,000
        /// times its size.
        public static let cannotDecodeContentData = Code("cannotDecodeContentData")
        /// Resume data is damaged, of an unknown version, or no longer matches its file.
        public static let cannotDecodeResumeData = Code("cannotDecodeResumeData")
        /// The delegate refused the response or a redirect.
        public static let cancelledByDelegate = Code("cancelledByDelegate")
        /// The delegate cancelled an authentication challenge.
        public static let userCancelledAuthentication = Code("userCancelledAuthentication")
        /// Credentials are needed and none were given (a proxy's `407`).
        public static let userAuthenticationRequired = Code("userAuthenticationRequired")
        /// The request may only be answered from the cache, and the cache has no answer.
        public static let resourceUnavailable = Code("resourceUnavailable")
        /// Anything else; see ``FerryError/underlyingError``.
        public static let unknown = Code("unknown")
    }

    public var code: Code
    /// A sentence for a person: what happened and, when there is one, what to do.
    public var message: String
    public var failingURL: URL?
    /// The lower-level error (AsyncHTTPClient, NIO, POSIX), when there was one.
    public var underlyingError: (any Error)?
    /// For a cancelled or failed download that can continue: pass it to
    /// `downloadTask(withResumeData:)`.
    public var resumeData: Data?
    /// For ``Code/notConnectedToInternet``: the kind of link the session's settings ruled out,
    /// when one was there (nil: there was no link to the host at all).
    public var networkUnavailableReason: NetworkUnavailableReason?

    /// Links a session may rule out (`allowsCellularAccess`, `allowsExpensiveNetworkAccess`,
    /// `allowsConstrainedNetworkAccess`), as `URLError.NetworkUnavailableReason` names them.
    public enum NetworkUnavailableReason: String, Sendable, Hashable {
        case cellular, expensive, constrained
    }

    public init(
        _ code: Code,
        _ message: String,
        url: URL? = nil,
        underlying: (any Error)? = nil,
        resumeData: Data? = nil
    ) {
        self.code = code
        self.message = message
        self.failingURL = url
        self.underlyingError = underlying
        self.resumeData = resumeData
    }

    /// The code alone, safe for logs: no URL (it may carry a token), no payload.
    public var shortDescription: String { code.description }

    public var description: String {
        var text = "\(code): \(message)"
        if let failingURL { text += " (\(failingURL.redactedForLogs))" }
        if let underlyingError { text += " [cause: \(underlyingError)]" }
        return text
    }

    /// What this failure means for the retry rulebook. The one classification of errors,
    /// used in-process and by ferryd: no connection (refused, no such host, TLS handshake)
    /// means nothing was sent; a connection lost before any response byte (and before any
    /// body byte was handed over) is `closedBeforeResponse`; other losses and idle time-outs
    /// broke an exchange that had begun; everything else is permanent.
    public func attemptOutcome(responseArrived: Bool, bodyDelivered: Bool) -> AttemptOutcome {
        switch code {
        case .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost, .secureConnectionFailed:
            return .notConnected
        case .networkConnectionLost where !responseArrived && !bodyDelivered:
            return .closedBeforeResponse
        case .networkConnectionLost, .timedOut:
            return .brokenAfterSending
        default:
            return .permanent
        }
    }
}

extension URL {
    /// The URL without query and user info, for logs and messages: queries often carry tokens.
    public var redactedForLogs: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
            return "<url>"
        }
        components.user = nil
        components.password = nil
        let hadQuery = components.query != nil
        components.query = nil
        components.fragment = nil
        // Appended after rendering: URLComponents would percent-encode the ellipsis.
        return (components.string ?? "<url>") + (hadQuery ? "?…" : "")
    }
}
