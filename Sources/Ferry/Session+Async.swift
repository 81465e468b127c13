import FerryCore
public import FerryEngine
public import Foundation
import AsyncAlgorithms

/// The async/await face of a session. Cancelling the calling Swift task cancels the
/// Ferry task.
///
/// ```swift
/// let (data, response) = try await Session.shared.data(for: Request(url: url))
/// let (file, _) = try await session.download(for: Request(url: isoURL))   // the file is yours
/// let (reply, _) = try await session.upload(for: request, fromFile: photo)
/// ```
extension Session {
    public func data(for request: Request) async throws -> (Data, Response) {
        try await runCollecting(register { DataTask(session: self, identifier: $0, request: request, completionHandler: nil, collectsBody: true) })
    }

    public func upload(for request: Request, from data: Data) async throws -> (Data, Response) {
        try await runCollecting(collectingUpload(request, .data(data)))
    }

    public func upload(for request: Request, fromFile file: URL) async throws -> (Data, Response) {
        try await runCollecting(collectingUpload(request, .file(file)))
    }

    /// Uploads from an async sequence of byte chunks. With `length` nil the body is sent chunked.
    public func upload<S: AsyncSequence & Sendable>(for request: Request, from stream: S, length: Int64?) async throws -> (Data, Response)
    where S.Element == [UInt8] {
        let body = UploadBody.stream(length: length) {
            AsyncThrowingStream { continuation in
                let pump = self.delegateQueue.spawn {
                    do {
                        for try await chunk in stream { continuation.yield(chunk) }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                guard let pump else {
                    continuation.finish(throwing: FerryError(.cancelled, "the session was invalidated", url: request.url))
                    return
                }
                continuation.onTermination = { _ in pump.cancel() }
            }
        }
        return try await runCollecting(collectingUpload(request, body))
    }

    /// Downloads to a file that is yours to move or delete.
    public func download(for request: Request) async throws -> (URL, Response) {
        let task = register { DownloadTask(session: self, identifier: $0, request: request, partialFile: self.newDownloadFile(), validator: nil, handsFileToCaller: true) }
        return try await runDownload(task)
    }

    /// Continues a download from resume data; the file is yours.
    public func download(resumeFrom resumeData: Data) async throws -> (URL, Response) {
        try await runDownload(makeResumedDownload(resumeData, handsFileToCaller: true))
    }

    /// The response as soon as its head arrives, and its body as bytes, read at the pace
    /// you consume them (the transfer waits for you; memory stays flat).
    public func bytes(for request: Request) async throws -> (ResponseBytes, Response) {
        let channel = AsyncThrowingChannel<Data, any Error>()
        let task = register {
            DataTask(session: self, identifier: $0, request: request, completionHandler: nil, chunkSink: { chunk in await channel.send(chunk) })
        }
        let events = task.events
        task.resume()
        delegateQueue.spawn {
            await task.waitUntilCompleted()
            if let error = task.error { channel.fail(error) } else { channel.finish() }
        }
        return try await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case .response(let response):
                    return (ResponseBytes(chunks: channel, task: task), response)
                case .completed(let error):
                    throw error ?? FerryError(.badServerResponse, "the task ended without a response", url: request.url)
                default:
                    continue
                }
            }
            throw FerryError(.cancelled, "cancelled", url: request.url)
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: Helpers

    private func collectingUpload(_ request: Request, _ body: UploadBody) -> UploadTask {
        register { UploadTask(session: self, identifier: $0, request: request, body: body, completionHandler: nil, collectsBody: true) }
    }

    /// Runs a task that keeps its body, and takes the body once it completed. (No completion
    /// handler: a task without one and without a delegate completes without the delegate
    /// queue's turn.)
    private func runCollecting(_ task: DataTask) async throws -> (Data, Response) {
        try await run(task) {
            if let error = task.error { return .failure(error) }
            return task.response.map { .success((task.takeCollectedBody() ?? Data(), $0)) }
        }
    }

    private func runDownload(_ task: DownloadTask) async throws -> (URL, Response) {
        try await run(task) {
            if let error = task.error { return .failure(error) }
            return task.response.map { .success((task.partialFile, $0)) }
        }
    }

    /// Resumes `task`, waits for it, and reads its outcome; cancelling the caller cancels it.
    private func run<T: Sendable>(_ task: SessionTask, outcome: @escaping @Sendable () -> Result<T, FerryError>?) async throws -> T {
        try await withTaskCancellationHandler {
            task.resume()
            await task.waitUntilCompleted()
            guard let result = outcome() else {
                throw task.error ?? FerryError(.badServerResponse, "the task ended without a response", url: task.originalRequest.url)
            }
            return try result.get()
        } onCancel: {
            task.cancel()
        }
    }
}

/// A response body read as bytes or chunks, at the consumer's pace.
public struct ResponseBytes: AsyncSequence, Sendable {
    public typealias Element = UInt8
    let chunks: AsyncThrowingChannel<Data, any Error>
    let task: DataTask

    public struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: AsyncThrowingChannel<Data, any Error>.AsyncIterator
        var current = Data()
        var index = 0

        public mutating func next() async throws -> UInt8? {
            while index >= current.count {
                guard let next = try await chunks.next() else { return nil }
                current = next
                index = current.startIndex
                if current.isEmpty { index = 0 }
            }
            defer { index += 1 }
            return current[index]
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: chunks.makeAsyncIterator())
    }
}
