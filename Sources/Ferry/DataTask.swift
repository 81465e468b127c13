import FerryCore
import FerryEngine
import Foundation
import NIOConcurrencyHelpers

/// A request whose response body comes back in memory (or chunk by chunk to the delegate).
public class DataTask: SessionTask, @unchecked Sendable {
    typealias CompletionHandler = @Sendable (Data?, Response?, FerryError?) async -> Void

    let completionHandler: CompletionHandler?
    /// Chunks go here as they arrive (for `bytes(for:)`); nil collects or forwards to the delegate.
    let chunkSink: (@Sendable (Data) async -> Void)?
    /// The body is kept in memory: for the completion handler, or for the async API, which
    /// takes it with ``takeCollectedBody()`` once the task completed.
    private let collectsBody: Bool
    private let collected = NIOLockedValueBox<Data?>(nil)

    init(
        session: Session, identifier: Int, request: Request, completionHandler: CompletionHandler?,
        collectsBody: Bool = false, chunkSink: (@Sendable (Data) async -> Void)? = nil
    ) {
        self.completionHandler = completionHandler
        self.collectsBody = collectsBody || completionHandler != nil
        self.chunkSink = chunkSink
        super.init(session: session, identifier: identifier, request: request)
    }

    override func makeTransfer() throws -> Transfer {
        var transfer = session.transfer(for: originalRequest)
        transfer.upload = uploadBody
        // Keep the body when someone will ask for it; otherwise only pass chunks along.
        transfer.destination = collectsBody ? .memory(limit: session.configuration.maximumDataTaskBodySize) : .stream
        return transfer
    }

    /// The body collected for the async API (once: it is handed over, not copied).
    func takeCollectedBody() -> Data? {
        collected.withLockedValue { value in
            defer { value = nil }
            return value
        }
    }

    override func dataArrived(_ data: Data) async {
        // In a background session the body comes in events, not in a transfer result.
        if session.configuration.isBackground, collectsBody {
            collected.withLockedValue { body in
                if body == nil { body = Data() }
                body!.append(data)
            }
        }
        await chunkSink?(data)
    }

    override func didFinishTransfer(_ result: TransferResult) {
        collected.withLockedValue { $0 = result.body }
    }

    override var hasCompletionHandler: Bool { completionHandler != nil }

    override func completionCallback(_ error: FerryError?) async {
        guard let completionHandler else { return }
        let body = takeCollectedBody()
        await completionHandler(error == nil ? (body ?? Data()) : nil, response, error)
    }
}

/// A data task whose request body comes from memory, a file or a stream.
public final class UploadTask: DataTask, @unchecked Sendable {
    let body: UploadBody

    init(session: Session, identifier: Int, request: Request, body: UploadBody, completionHandler: CompletionHandler?, collectsBody: Bool = false) {
        self.body = body
        super.init(session: session, identifier: identifier, request: request, completionHandler: completionHandler, collectsBody: collectsBody)
    }

    override var kind: TaskKind { .upload }
    override var uploadBody: UploadBody? { body }
}
