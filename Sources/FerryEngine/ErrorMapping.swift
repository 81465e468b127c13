import FerryCore
import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

extension FerryError {
    /// Turns whatever AsyncHTTPClient, NIO or the OS threw into a code a user can switch on,
    /// keeping the original as `underlyingError`.
    /// Any error as a `FerryError` (kept as it is when it already is one).
    public static func from(_ error: any Error, url: URL) -> FerryError {
        if let error = error as? FerryError { return error }
        if error is CancellationError {
            return FerryError(.cancelled, "the task was cancelled", url: url, underlying: error)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled, .requestStreamCancelled:
                return FerryError(.cancelled, "the task was cancelled", url: url, underlying: error)
            case .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout:
                return FerryError(.timedOut, "the request timed out", url: url, underlying: error)
            case .connectTimeout:
                return FerryError(.timedOut, "connecting to \(url.host ?? "the host") timed out", url: url, underlying: error)
            case .tlsHandshakeTimeout:
                return FerryError(.secureConnectionFailed, "the TLS handshake timed out", url: url, underlying: error)
            case .remoteConnectionClosed:
                return FerryError(.networkConnectionLost, "the server closed the connection before the response was complete", url: url, underlying: error)
            case .invalidURL, .emptyHost, .emptyScheme:
                return FerryError(.badURL, "the URL is not valid", url: url, underlying: error)
            case .bodyLengthMismatch:
                return FerryError(.badServerResponse, "the body length does not match Content-Length", url: url, underlying: error)
            case .redirectLimitReached, .redirectCycleDetected:
                return FerryError(.httpTooManyRedirects, "too many redirects", url: url, underlying: error)
            case .proxyAuthenticationRequired:
                return FerryError(
                    .userAuthenticationRequired,
                    "the proxy asks for a user name and password (407): give them in the proxy settings (kCFProxyUsernameKey and kCFProxyPasswordKey, or user:password@ in http_proxy)",
                    url: url, underlying: error)
            case .invalidProxyResponse:
                return FerryError(.cannotConnectToHost, "the proxy did not open a tunnel to \(url.host ?? "the host")", url: url, underlying: error)
            default:
                if let scheme = url.scheme?.lowercased(), scheme != "http", scheme != "https" {
                    return FerryError(.unsupportedURL, "only http and https are supported", url: url, underlying: error)
                }
                return FerryError(.unknown, "the HTTP client failed: \(error)", url: url, underlying: error)
            }
        }
        if let error = error as? NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return FerryError(.cannotFindHost, "the host name \(url.host ?? "") did not resolve", url: url, underlying: error)
            }
            // Every address had no route (ENETUNREACH): the platform's "not connected".
            if !error.connectionErrors.isEmpty, error.connectionErrors.allSatisfy({ ($0.error as? IOError)?.errnoCode == ENETUNREACH }) {
                return noRoute(to: url, underlying: error)
            }
            return FerryError(.cannotConnectToHost, "could not connect to \(url.host ?? ""):\(url.port.map(String.init) ?? "default port")", url: url, underlying: error)
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ENETUNREACH:
                return noRoute(to: url, underlying: error)
            case ECONNREFUSED, EHOSTUNREACH:
                return FerryError(.cannotConnectToHost, "could not connect to \(url.host ?? ""): \(error.description)", url: url, underlying: error)
            case ECONNRESET, EPIPE:
                return FerryError(.networkConnectionLost, "the connection was reset", url: url, underlying: error)
            default:
                return FerryError(.networkConnectionLost, "I/O error: \(error.description)", url: url, underlying: error)
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout:
                return FerryError(.timedOut, "connecting timed out", url: url, underlying: error)
            case .eof, .ioOnClosedChannel, .outputClosed, .alreadyClosed, .inputClosed:
                return FerryError(.networkConnectionLost, "the connection closed", url: url, underlying: error)
            default:
                return FerryError(.networkConnectionLost, "the connection failed: \(error)", url: url, underlying: error)
            }
        }
        if error is HTTPParserError || error is NIOHTTPDecoderError {
            return FerryError(.badServerResponse, "the server's response is not valid HTTP", url: url, underlying: error)
        }
        if error is ClientCertificateChallengeCancelled {
            return FerryError(.cancelled, "the delegate cancelled the server's request for a client certificate", url: url, underlying: error)
        }
        if let error = error as? NIOSSLError {
            return tlsFailure(error, url: url)
        }
        if let error = error as? BoringSSLError {
            return tlsFailure(error, url: url)
        }
        if let error = error as? NIOSSLExtraError {
            // The certificate does not name the host: as untrusted as an unknown issuer.
            let untrusted = error == .failedToValidateHostname || error == .serverHostnameImpossibleToMatch
            return FerryError(untrusted ? .serverCertificateUntrusted : .secureConnectionFailed,
                              untrusted ? "the server's certificate does not name \(url.host ?? "the host")" : "TLS failed: \(error)",
                              url: url, underlying: error)
        }
        return FerryError(.unknown, String(describing: error), url: url, underlying: error)
    }

    /// No route to the host (ENETUNREACH, for every address tried): the platform's "not connected".
    private static func noRoute(to url: URL, underlying: any Error) -> FerryError {
        FerryError(.notConnectedToInternet, "no network: no route to \(url.host ?? "the host")", url: url, underlying: underlying)
    }
}

extension FerryError {
    /// A TLS failure, by the case NIOSSL reports. Which check BoringSSL failed is only in the
    /// text of its error stack (NIOSSL keeps the numeric reason private), so that one test
    /// reads the reason's name, `CERTIFICATE_VERIFY_FAILED`, in a handshake failure alone.
    static func tlsFailure(_ error: NIOSSLError, url: URL) -> FerryError {
        switch error {
        case .unableToValidateCertificate, .noCertificateToValidate, .cannotMatchULabel:
            return FerryError(.serverCertificateUntrusted, "the server's certificate is not trusted", url: url, underlying: error)
        case .handshakeFailed(.sslError(let stack)):
            if stack.contains(where: { "\($0)".contains("CERTIFICATE_VERIFY_FAILED") }) {
                return FerryError(.serverCertificateUntrusted, "the server's certificate is not trusted", url: url, underlying: error)
            }
            return alertFailure(stack.map { "\($0)" }, url: url, underlying: error)
                ?? FerryError(.secureConnectionFailed, "TLS failed: \(error)", url: url, underlying: error)
        default:
            return FerryError(.secureConnectionFailed, "TLS failed: \(error)", url: url, underlying: error)
        }
    }

    /// A TLS error after the handshake (BoringSSL's, as NIOSSL passes it on): in TLS 1.3 a
    /// server that wanted a client certificate says so once the client has finished.
    static func tlsFailure(_ error: BoringSSLError, url: URL) -> FerryError {
        if case .sslError(let stack) = error, let failure = alertFailure(stack.map { "\($0)" }, url: url, underlying: error) {
            return failure
        }
        return FerryError(.secureConnectionFailed, "TLS failed: \(error)", url: url, underlying: error)
    }

    /// The server's alerts about the client's certificate: none sent (TLS 1.3 names it;
    /// TLS 1.2's `handshake_failure` is also what a server that requires one sends), or one refused.
    private static func alertFailure(_ reasons: [String], url: URL, underlying: any Error) -> FerryError? {
        if reasons.contains(where: { $0.contains("ALERT_CERTIFICATE_REQUIRED") }) {
            return FerryError(.clientCertificateRequired, "the server asks for a client certificate", url: url, underlying: underlying)
        }
        if reasons.contains(where: { $0.contains("ALERT_BAD_CERTIFICATE") || $0.contains("ALERT_UNKNOWN_CA") || $0.contains("ALERT_CERTIFICATE_UNKNOWN") }) {
            return FerryError(.clientCertificateRejected, "the server refused the client certificate", url: url, underlying: underlying)
        }
        if reasons.contains(where: { $0.contains("ALERT_HANDSHAKE_FAILURE") }) {
            return FerryError(.secureConnectionFailed,
                              "the server ended the TLS handshake (handshake_failure: no protocol or cipher in common, or it requires a client certificate)",
                              url: url, underlying: underlying)
        }
        return nil
    }
}
