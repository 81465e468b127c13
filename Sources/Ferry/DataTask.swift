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
    private let collected = NIOLockedValueBox<Data?>(nil)

    init(session: Session, identifier: Int, request: Request, completionHandler: CompletionHandler?, chunkSink: (@Sendable (Data) async -> Void)? = nil) {
        self.completionHandler = completionHandler
        self.chunkSink = chunkSink
        super.init(session: session, identifier: identifier, request: request)
    }

    override func makeTransfer() throws -> Transfer {
        var transfer = session.transfer(for: originalRequest)
        transfer.upload = uploadBody
        // Keep the body when someone will ask for it; otherwise only pass chunks along.
        transfer.destination = completionHandler != nil ? .memory(limit: session.configuration.maximumDataTaskBodySize) : .stream
        return transfer
    }

    override func dataArrived(_ data: Data) async {
        // In a background session the body comes in events, not in a transfer result.
        if session.configuration.isBackground, completionHandler != nil {
            collected.withLockedValue { body in
                if body == nil { body = Data() }
                body!.append(data)
            }
        }
        await chunkSink?(data)
    }

    override func didFinishTransfer(_ result: TransferResult) async {
        collected.withLockedValue { $0 = result.body }
    }

    override func completionCallback(_ error: FerryError?) async {
        guard let completionHandler else { return }
        let body = collected.withLockedValue { value in
            defer { value = nil }
            return value
        }
        await completionHandler(error == nil ? (body ?? Data()) : nil, response, error)
    }
}

/// A data task whose request body comes from memory, a file or a stream.
public final class UploadTask: DataTask, @unchecked Sendable {
    let body: UploadBody

    init(session: Session, identifier: Int, request: Request, body: UploadBody, completionHandler: CompletionHandler?) {
        self.body = body
        super.init(session: session, identifier: identifier, request: request, completionHandler: completionHandler)
    }

    override var kind: TaskKind { .upload }
    override var uploadBody: UploadBody? { body }
}
