public import FerryEngine
public import Foundation

/// What a task's requests took: each request with its times and byte counts, the task's
/// whole interval, and how many redirects it followed. The delegate gets it once, just before
/// the task completes (``SessionDelegate/session(_:task:didFinishCollecting:)``), as
/// URLSession's `URLSessionTaskMetrics`.
///
/// ```swift
/// func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
///     for transaction in metrics.transactions {
///         print(transaction.request.url, transaction.networkProtocolName ?? "?", transaction.countOfResponseBodyBytesReceived)
///     }
/// }
/// ```
///
/// A background task's requests run in ferryd: its metrics have its interval and no
/// transactions.
public struct TaskMetrics: Sendable {
    public var transactions: [TransactionMetrics]
    /// From the task's first `resume()` to its completion.
    public var taskInterval: DateInterval
    /// Redirects followed.
    public var redirectCount: Int

    init(transactions: [TransactionMetrics], start: Date?, end: Date) {
        self.transactions = transactions
        self.taskInterval = DateInterval(start: min(start ?? end, end), end: end)
        self.redirectCount = transactions.dropLast().filter { $0.response?.isRedirect == true }.count
    }
}
