public import Foundation
import NIOConcurrencyHelpers

/// URLSession's async methods. Each makes a task, gives it `delegate` as its own, resumes it
/// and returns its outcome; cancelling the calling Swift task cancels it.
///
/// ```swift
/// let (data, response) = try await URLSession.shared.data(from: url)
/// let (file, _) = try await session.download(for: request)          // the file is yours
/// let (reply, _) = try await session.upload(for: request, fromFile: photo, delegate: progress)
/// ```
extension URLSession {
    public func data(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        try await collect(delegate) { handler in dataTask(with: request, completionHandler: handler) }
    }

    public func data(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        try await data(for: URLRequest(url: url), delegate: delegate)
    }

    public func upload(for request: URLRequest, from bodyData: Data, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        try await collect(delegate) { handler in uploadTask(with: request, from: bodyData, completionHandler: handler) }
    }

    public func upload(for request: URLRequest, fromFile fileURL: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        try await collect(delegate) { handler in uploadTask(with: request, fromFile: fileURL, completionHandler: handler) }
    }

    /// Downloads to a file that is yours to move or delete.
    public func download(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        try await keep(delegate) { handler in downloadTask(with: request, completionHandler: handler) }
    }

    public func download(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        try await download(for: URLRequest(url: url), delegate: delegate)
    }

    /// Continues a download from resume data; the file is yours.
    public func download(resumeFrom resumeData: Data, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        do {
            let (file, response) = try await session.download(resumeFrom: resumeData)
            return (file, HTTPURLResponse(response))
        } catch let error as FerryError {
            throw URLError(error)
        }
    }

    /// The response as soon as its head arrives, and its body at the pace it is read.
    public func bytes(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        do {
            let (bytes, response) = try await session.bytes(for: Self.ferryRequest(request))
            return (bytes, HTTPURLResponse(response))
        } catch let error as FerryError {
            throw URLError(error)
        }
    }

    public func bytes(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        try await bytes(for: URLRequest(url: url), delegate: delegate)
    }

    // MARK: Helpers

    private func collect(
        _ delegate: (any URLSessionTaskDelegate)?,
        _ make: (@escaping @Sendable (Data?, URLResponse?, Error?) -> Void) -> URLSessionTask
    ) async throws -> (Data, URLResponse) {
        try await run(delegate) { resume in
            make { data, response, error in
                resume(error.map { .failure($0) } ?? response.map { .success((data ?? Data(), $0)) }
                    ?? .failure(URLError(.badServerResponse)))
            }
        }
    }

    /// A download whose file is moved out of the session's way before the handler returns.
    private func keep(
        _ delegate: (any URLSessionTaskDelegate)?,
        _ make: (@escaping @Sendable (URL?, URLResponse?, Error?) -> Void) -> URLSessionTask
    ) async throws -> (URL, URLResponse) {
        try await run(delegate) { resume in
            make { location, response, error in
                if let error { return resume(.failure(error)) }
                guard let location, let response else { return resume(.failure(URLError(.badServerResponse))) }
                let kept = location.deletingLastPathComponent().appendingPathComponent("CFNetworkDownload_\(UUID().uuidString).tmp")
                do {
                    try FileManager.default.moveItem(at: location, to: kept)
                    resume(.success((kept, response)))
                } catch {
                    resume(.failure(URLError(.cannotMoveFile, userInfo: [NSUnderlyingErrorKey: error])))
                }
            }
        }
    }

    /// Makes the task, gives it `delegate`, resumes it, and waits for the outcome its handler
    /// reports; cancelling the caller cancels the task.
    private func run<T: Sendable>(
        _ delegate: (any URLSessionTaskDelegate)?,
        _ make: (@escaping @Sendable (Result<T, Error>) -> Void) -> URLSessionTask
    ) async throws -> T {
        let made = NIOLockedValueBox<URLSessionTask?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
                let task = make { continuation.resume(with: $0) }
                task.delegate = delegate
                made.withLockedValue { $0 = task }
                task.resume()
                // Cancelled before the task existed: onCancel found nothing to cancel.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            made.withLockedValue { $0 }?.cancel()
        }
    }
}
