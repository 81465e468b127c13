public import FerryEngine
public import Foundation

// URLError itself is Foundation's (its codes, `failingURL`, `NSURLErrorDomain`); what
// FoundationNetworking adds to it on Linux is here, so code that catches URLErrors ports
// without that module. (Importing FoundationNetworking too makes these names ambiguous:
// docs/porting.md.)

/// The `userInfo` key of a failed download's resume data.
public let NSURLSessionDownloadTaskResumeData = "NSURLSessionDownloadTaskResumeData"
/// The `userInfo` key of the kind of link a session's settings ruled out (an `Int`, a
/// ``URLError/NetworkUnavailableReason`` raw value), in a `notConnectedToInternet` error.
public let NSURLErrorNetworkUnavailableReasonKey = "NSURLErrorNetworkUnavailableReasonKey"
/// The `userInfo` key of why a background task was cancelled.
public let NSURLErrorBackgroundTaskCancelledReasonKey = "NSURLErrorBackgroundTaskCancelledReasonKey"

extension URLError {
    /// Why a background task was cancelled (`NSURLErrorBackgroundTaskCancelledReasonKey`).
    public enum BackgroundTaskCancelledReason: Int, Sendable {
        case userForceQuitApplication = 0
        case backgroundUpdatesDisabled = 1
        case insufficientSystemResources = 2
    }

    /// The kind of link a session ruled out (`allowsCellularAccess`, `allowsExpensiveNetworkAccess`,
    /// `allowsConstrainedNetworkAccess`) when that is why a task failed with `.notConnectedToInternet`.
    public enum NetworkUnavailableReason: Int, Sendable {
        case cellular = 0
        case expensive = 1
        case constrained = 2
    }

    /// The platform's error for a Ferry error: its code by meaning, the failing URL, a
    /// download's resume data, and the Ferry error itself under `NSUnderlyingErrorKey`.
    ///
    /// ```swift
    /// catch let error as URLError {
    ///     if let resumeData = error.downloadTaskResumeData { save(resumeData) }   // continue later
    /// }
    /// ```
    public init(_ error: FerryError) {
        var info: [String: Any] = [NSLocalizedDescriptionKey: error.message, NSUnderlyingErrorKey: error]
        if let url = error.failingURL { info[NSURLErrorFailingURLErrorKey] = url }
        if let resumeData = error.resumeData { info[NSURLSessionDownloadTaskResumeData] = resumeData }
        if let reason = error.networkUnavailableReason {
            let platform: NetworkUnavailableReason = switch reason {
            case .cellular: .cellular
            case .expensive: .expensive
            case .constrained: .constrained
            }
            info[NSURLErrorNetworkUnavailableReasonKey] = platform.rawValue
        }
        self.init(Self.code(for: error.code), userInfo: info)
    }

    /// The Ferry code's platform twin; codes with no twin are `.unknown`.
    static func code(for code: FerryError.Code) -> Code {
        let codes: [FerryError.Code: Code] = [
            .cancelled: .cancelled, .timedOut: .timedOut, .badURL: .badURL, .unsupportedURL: .unsupportedURL,
            .cannotConnectToHost: .cannotConnectToHost, .cannotFindHost: .cannotFindHost, .notConnectedToInternet: .notConnectedToInternet,
            .networkConnectionLost: .networkConnectionLost, .badServerResponse: .badServerResponse,
            .httpTooManyRedirects: .httpTooManyRedirects, .secureConnectionFailed: .secureConnectionFailed,
            .serverCertificateUntrusted: .serverCertificateUntrusted,
            .clientCertificateRequired: .clientCertificateRequired, .clientCertificateRejected: .clientCertificateRejected, .fileDoesNotExist: .fileDoesNotExist,
            .cannotReadFile: .noPermissionsToReadFile, .cannotWriteToFile: .cannotWriteToFile,
            .dataLengthExceedsMaximum: .dataLengthExceedsMaximum, .integrityCheckFailed: .cannotDecodeContentData, .cannotDecodeContentData: .cannotDecodeContentData,
            .cannotDecodeResumeData: .cannotDecodeRawData, .cancelledByDelegate: .cancelled, .userCancelledAuthentication: .userCancelledAuthentication, .userAuthenticationRequired: .userAuthenticationRequired, .resourceUnavailable: .resourceUnavailable,
            .backgroundSessionInUseByAnotherProcess: .backgroundSessionInUseByAnotherProcess,
            .backgroundSessionWasDisconnected: .backgroundSessionWasDisconnected,
        ]
        return codes[code] ?? .unknown
    }

    /// A download's resume data, when it can continue (`cancel(byProducingResumeData:)`, a lost connection).
    public var downloadTaskResumeData: Data? { userInfo[NSURLSessionDownloadTaskResumeData] as? Data }

    /// Why a `.notConnectedToInternet` task could not use the link there was
    /// (`NSURLErrorNetworkUnavailableReasonKey`); nil when there was no link to its host.
    public var networkUnavailableReason: NetworkUnavailableReason? {
        (userInfo[NSURLErrorNetworkUnavailableReasonKey] as? Int).flatMap(NetworkUnavailableReason.init(rawValue:))
    }

    public var backgroundTaskCancelledReason: BackgroundTaskCancelledReason? {
        (userInfo[NSURLErrorBackgroundTaskCancelledReasonKey] as? Int).flatMap(BackgroundTaskCancelledReason.init(rawValue:))
    }

    /// The Ferry error this was made from.
    public var ferryError: FerryError? { userInfo[NSUnderlyingErrorKey] as? FerryError }
}
