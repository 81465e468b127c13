import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore

/// An error that renders itself as the tutorials' services did: a status and a JSON body
/// `{"error": "…"}` saying what was wrong (the images API adds Imgur's envelope).
///
/// ```swift
/// throw APIError(.badRequest, "Invalid value for parameter 'overwrite'")
/// ```
public struct APIError: HTTPResponseError, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// What was wrong, for the `error` field. Never contains a token.
    public var message: String
    /// Extra response headers (`Retry-After`, rate-limit headers…).
    public var headers: HTTPFields
    /// Render in Imgur's envelope (`{data:{error,request,method}, success:false, status}`).
    var imgurStyle: Bool = false

    /// Creates an error with a status and a message for its JSON body.
    public init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    static func notFound(_ path: String) -> APIError { APIError(.notFound, "Path '\(path)' not found") }
    static func badParameter(_ name: String, _ detail: String = "") -> APIError {
        APIError(.badRequest, "Invalid value for parameter '\(name)'" + (detail.isEmpty ? "" : ": \(detail)"))
    }
    static let unauthorized = APIError(.unauthorized, "Invalid or expired access token",
                                       headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
    /// A token that was valid once and was revoked (`byteclub-server accounts revoke`).
    static let revokedToken = APIError(
        .unauthorized, "Access token revoked: sign in again to get a new one",
        headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\", error_description=\"The access token was revoked\""])
    static let overQuota = APIError(.init(code: 507, reasonPhrase: "Insufficient Storage"), "Over quota: this upload does not fit in the account's storage")
    static func tooLarge(_ limit: Int64) -> APIError { APIError(.contentTooLarge, "Request body larger than \(limit) bytes") }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var object: [String: Any] = ["error": message]
        if imgurStyle {
            object = [
                "data": ["error": message, "request": request.uri.path, "method": request.method.rawValue],
                "success": false,
                "status": status.code,
            ]
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Response {
    /// A JSON response from an `Encodable` value.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A JSON response from a `JSONSerialization` object.
    static func jsonObject(_ object: Any, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
