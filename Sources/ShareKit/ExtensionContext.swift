import Foundation
import Synchronization

/// The extension's side of a share: the items it was given, and how it ends the request
/// (the `NSExtensionContext` of iOS). An extension ends every request exactly once; after
/// that ``ShareExtension/main(_:)`` returns and the process exits.
///
/// ```swift
/// let task = session.uploadTask(with: request, from: body)
/// task.resume()                                 // ferryd has it now
/// extensionContext.completeRequest(returningItems: [])
/// ```
public final class ExtensionContext: Sendable {
    /// What the user shares.
    public let inputItems: [ExtensionItem]
    /// The extension's bundle identifier.
    public let bundleIdentifier: String
    private let resultPath: String?
    private let state = Mutex<State>(State())

    private struct State {
        var outcome: ShareOutcome?
        var postSelectedAt: UInt64?
        var waiters: [CheckedContinuation<ShareOutcome, Never>] = []
    }

    /// A context for `items`; the outcome goes to `resultPath` when there is one.
    public init(inputItems: [ExtensionItem], bundleIdentifier: String, resultPath: String?) {
        self.inputItems = inputItems
        self.bundleIdentifier = bundleIdentifier
        self.resultPath = resultPath
    }

    /// Ends the request successfully. Call it as soon as the work is handed over (to a
    /// background session): the share sheet is waiting, and the process exits next.
    public func completeRequest(returningItems items: [ExtensionItem] = []) {
        end(ShareOutcome(kind: .completed, returnedItems: items))
    }

    /// Ends the request without doing it; `error` says why (nil: the user cancelled).
    public func cancelRequest(withError error: (any Error)?) {
        end(ShareOutcome(kind: .cancelled, error: error.map { "\($0)" } ?? "cancelled by the user"))
    }

    /// How the request ended, once it has.
    public var outcome: ShareOutcome? { state.withLock { $0.outcome } }

    /// Waits until the extension ends the request.
    func ended() async -> ShareOutcome {
        await withCheckedContinuation { continuation in
            let done: ShareOutcome? = state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// The moment Post was chosen, kept for the outcome.
    func markPostSelected() {
        state.withLock { $0.postSelectedAt = MonotonicClock.nanoseconds() }
    }

    private func end(_ proposed: ShareOutcome) {
        let (outcome, waiters): (ShareOutcome?, [CheckedContinuation<ShareOutcome, Never>]) = state.withLock { state in
            guard state.outcome == nil else { return (nil, []) }  // the first ending counts
            var outcome = proposed
            outcome.postSelectedAt = state.postSelectedAt
            state.outcome = outcome
            defer { state.waiters = [] }
            return (outcome, state.waiters)
        }
        guard let outcome else { return }
        if let resultPath {
            do { try outcome.write(to: resultPath) } catch {
                FileHandle.standardError.write(Data("share extension: \(error)\n".utf8))
            }
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
