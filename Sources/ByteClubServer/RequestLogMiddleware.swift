import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Logs each request once it is answered (method, path without the query, which may carry a
/// token, status, duration), puts the request id in `X-Request-Id`, and turns errors that do
/// not render themselves into JSON bodies (`{"error": …}` naming the request id for 5xx).
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ByteClubContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let requestID = context.id
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = try error.response(from: request, context: context)
        } catch let error as HTTPError {
            let message = error.body ?? (error.status == .notFound ? "Not found: \(request.method.rawValue) \(request.uri.path)" : error.status.reasonPhrase)
            response = try APIError(error.status, message, headers: error.headers).response(from: request, context: context)
        } catch let error as HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            context.logger.error("request failed: \(String(reflecting: error))")
            response = try APIError(.internalServerError, "Internal error (request id \(requestID))").response(from: request, context: context)
        }
        response.headers[HTTPField.Name("X-Request-Id")!] = requestID
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info("\(request.method.rawValue) \(request.uri.path) → \(response.status.code)", metadata: [
            "ms": "\(Int(milliseconds))", "client": "\(context.clientAddress)",
        ])
        return response
    }
}
