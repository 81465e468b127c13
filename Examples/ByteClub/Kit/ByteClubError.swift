import Ferry
public import Foundation

/// What went wrong, in the words a member needs, with the exit status `byteclub` uses for it
/// (the table is in docs/byteclub.md).
///
/// ```swift
/// do { try await club.saveNote(named: "hello.txt", text: "hi") }
/// catch let error as ByteClubError { print(error.description); exit(error.exitStatus) }
/// ```
public enum ByteClubError: Error, Sendable, CustomStringConvertible, Equatable {
    /// No account saved and none in the environment.
    case notSignedIn
    /// 401: the token expired or was revoked.
    case signInAgain(String)
    /// The sign-in in the browser did not happen: the member chose Deny, or no answer came.
    case notApproved(String)
    /// 400, 405: the app sent something the service does not take.
    case badRequest(status: Int, String)
    /// 403: the OAuth request was refused (wrong app key, a member of another club).
    case forbidden(String)
    /// 404.
    case notFound(String)
    /// 429 or 503: the service asked to wait `retryAfter` seconds, longer than the app waits by itself.
    case busy(status: Int, retryAfter: Int?)
    /// 507.
    case overQuota(String)
    /// Any other status the service answered with.
    case server(status: Int, String)
    /// The service could not be reached, or the connection broke.
    case unreachable(String)
    /// The member stopped it (Ctrl-C, `c` in the terminal UI).
    case cancelled
    /// A local file or folder could not be read or written.
    case local(String)
    /// A command used the wrong way.
    case usage(String)

    public var description: String {
        switch self {
        case .notSignedIn: "not signed in: run `byteclub login --server URL` first"
        case .signInAgain(let detail): "the server no longer accepts this sign-in (\(detail)): sign in again with `byteclub login`"
        case .notApproved(let detail): "not signed in: \(detail)"
        case .badRequest(let status, let detail): "the server refused the request (\(status)): \(detail)"
        case .forbidden(let detail): "the server refused this app's OAuth request (403): \(detail)"
        case .notFound(let what): "not found: \(what)"
        case .busy(let status, let retryAfter):
            "the server is \(status == 429 ? "rate-limiting this app" : "unavailable") (\(status))" + (retryAfter.map { "; it asks to wait \($0) s" } ?? "") + "; try again later"
        case .overQuota(let detail): "the club's space is full (507): \(detail)"
        case .server(let status, let detail): "the server failed (\(status)): \(detail)"
        case .unreachable(let detail): "cannot reach the server: \(detail)"
        case .cancelled: "cancelled"
        case .local(let detail): detail
        case .usage(let detail): detail
        }
    }

    /// Distinct per kind, so scripts can tell them apart.
    public var exitStatus: Int32 {
        switch self {
        case .local: 1
        case .usage: 2
        case .notSignedIn, .signInAgain, .notApproved: 3
        case .badRequest, .forbidden: 4
        case .notFound: 5
        case .busy: 6
        case .overQuota: 7
        case .unreachable: 8
        case .server: 9
        case .cancelled: 130
        }
    }

    /// The error for an HTTP answer that is not a success; `body` is the service's JSON
    /// (`{"error": "…"}`) when it sent one, `retryAfter` its `Retry-After` header.
    public static func from(status: Int, retryAfter: String?, body: Data?, what: String) -> ByteClubError {
        let detail = serviceMessage(body) ?? HTTPStatusText.phrase(status)
        switch status {
        case 400, 405, 409, 411, 413, 415, 416: return .badRequest(status: status, detail)
        case 401: return .signInAgain(detail)
        case 403: return .forbidden(detail)
        case 404: return .notFound(what)
        case 429, 503: return .busy(status: status, retryAfter: retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        case 507: return .overQuota(detail)
        default: return .server(status: status, detail)
        }
    }

    /// The error for an HTTP answer that is not a success, from the response itself.
    static func from(_ response: HTTPURLResponse?, body: Data?, what: String) -> ByteClubError {
        from(status: response?.statusCode ?? 0, retryAfter: response?.value(forHTTPHeaderField: "Retry-After"), body: body, what: what)
    }

    /// A transport failure (the `URLError` a task ended with), as the member should read it.
    public static func from(_ error: any Error) -> ByteClubError {
        guard let error = error as? URLError else { return .unreachable(error.localizedDescription) }
        switch error.code {
        case .cancelled: return .cancelled
        case .fileDoesNotExist, .noPermissionsToReadFile, .cannotWriteToFile: return .local(error.localizedDescription)
        default: return .unreachable(error.localizedDescription)
        }
    }

    static func serviceMessage(_ body: Data?) -> String? {
        guard let body, let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        if let message = object["error"] as? String { return message }
        if let message = object["error_description"] as? String { return message }
        return nil
    }
}

/// Reason phrases for the statuses the service uses, for messages when it sent no body.
enum HTTPStatusText {
    static func phrase(_ status: Int) -> String {
        let phrases = [
            400: "bad request", 401: "unauthorized", 403: "forbidden", 404: "not found", 405: "method not allowed",
            409: "conflict", 411: "length required", 413: "request too large", 415: "unsupported media type",
            416: "range not satisfiable", 429: "too many requests", 500: "internal server error", 502: "bad gateway",
            503: "service unavailable", 504: "gateway timeout", 507: "insufficient storage",
        ]
        return phrases[status] ?? "HTTP \(status)"
    }
}
