import HTTPTypes
import Hummingbird
import Synchronization

/// Hummingbird's router that also remembers which methods each path pattern answers, so that a
/// request with another method gets `405` and `OPTIONS` gets `204`, both with `Allow`
/// (Hummingbird answers both with `404` and keeps its method table to itself).
///
/// ```swift
/// let routes = Routes(router)
/// routes.get("/3/image/:id") { request, context in … }
/// // DELETE /3/image/abc → routed; PUT /3/image/abc → 405, Allow: DELETE, GET, OPTIONS
/// ```
struct Routes {
    let router: Router<ByteClubContext>
    let table: AllowedMethods

    func on<Output: ResponseGenerator>(
        _ path: String, method: HTTPRequest.Method,
        use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output
    ) {
        router.on(RouterPath(path), method: method, use: handler)
        table.add(path, method)
    }

    func get<Output: ResponseGenerator>(_ path: String, use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output) {
        on(path, method: .get, use: handler)
    }

    func head<Output: ResponseGenerator>(_ path: String, use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output) {
        on(path, method: .head, use: handler)
    }

    func post<Output: ResponseGenerator>(_ path: String, use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output) {
        on(path, method: .post, use: handler)
    }

    func put<Output: ResponseGenerator>(_ path: String, use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output) {
        on(path, method: .put, use: handler)
    }

    func delete<Output: ResponseGenerator>(_ path: String, use handler: @Sendable @escaping (Request, ByteClubContext) async throws -> Output) {
        on(path, method: .delete, use: handler)
    }
}

/// Path patterns in Hummingbird's syntax (`:name` and `*` match one segment, `**` one or more)
/// and the methods routed for each. Filled while the router is built, read for every request.
final class AllowedMethods: Sendable {
    private let patterns = Mutex<[(segments: [Substring], methods: Set<HTTPRequest.Method>)]>([])

    func add(_ path: String, _ method: HTTPRequest.Method) {
        let segments = path.split(separator: "/")
        patterns.withLock { patterns in
            if let index = patterns.firstIndex(where: { $0.segments == segments }) {
                patterns[index].methods.insert(method)
            } else {
                patterns.append((segments, [method]))
            }
        }
    }

    /// The methods routed for `path` by any pattern that matches it; empty if none does.
    func methods(for path: String) -> Set<HTTPRequest.Method> {
        let segments = path.split(separator: "/")
        return patterns.withLock { patterns in
            patterns.reduce(into: Set<HTTPRequest.Method>()) { result, pattern in
                if Self.matches(pattern.segments, segments[...]) { result.formUnion(pattern.methods) }
            }
        }
    }

    private static func matches(_ pattern: [Substring], _ path: ArraySlice<Substring>) -> Bool {
        var path = path
        for (index, segment) in pattern.enumerated() {
            if segment == "**" { return index == pattern.count - 1 && !path.isEmpty }
            guard let first = path.first else { return false }
            if segment != "*" && !segment.hasPrefix(":") && segment != first { return false }
            path = path.dropFirst()
        }
        return path.isEmpty
    }

    /// The `Allow` value: the routed methods and `OPTIONS`, sorted.
    static func allowHeader(_ methods: Set<HTTPRequest.Method>) -> String {
        (methods.map(\.rawValue) + (methods.contains(.options) ? [] : ["OPTIONS"])).sorted().joined(separator: ", ")
    }
}

/// Answers `OPTIONS` (`204`) and a method the path is not routed for (`405`) with `Allow`;
/// paths no route matches go on to the router's `404`.
struct AllowMiddleware: RouterMiddleware {
    typealias Context = ByteClubContext
    let table: AllowedMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let methods = table.methods(for: request.uri.path)
        guard !methods.isEmpty, !methods.contains(request.method) else { return try await next(request, context) }
        let allow = AllowedMethods.allowHeader(methods)
        if request.method == .options {
            return Response(status: .noContent, headers: [.allow: allow])
        }
        throw APIError(.methodNotAllowed, "Method \(request.method.rawValue) is not allowed on \(request.uri.path); allowed: \(allow)",
                       headers: [.allow: allow])
    }
}
