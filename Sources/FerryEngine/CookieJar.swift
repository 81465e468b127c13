public import FerryCore
public import Foundation

/// Where a transfer's cookies come from and go to: the engine asks it for the `Cookie` header
/// of every request it sends (each redirect hop and retry included) and hands it the
/// `Set-Cookie` fields of every response head. Ferry's `HTTPCookieStorage` is one.
///
/// ```swift
/// var transfer = Transfer(request: Request(url: URL(string: "https://example.com/login")!))
/// transfer.cookies = HTTPCookieStorage.shared.jar(acceptPolicy: .always)
/// ```
public protocol CookieJar: Sendable {
    /// The `Cookie` header's value for a request to `url`, or nil for none.
    func cookieHeader(for url: URL) -> String?
    /// Stores what the response from `url` set (its `Set-Cookie` fields).
    func storeCookies(from headers: HeaderFields, for url: URL)
}
