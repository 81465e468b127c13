/// What a task does with its bodies: the one list for the library, the protocol and the store.
public enum TaskKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// The response body is handed over in memory (data events, or a completion handler's `Data`).
    case data
    /// The response body is written to a file handed over when the task completes.
    case download
    /// The request body is read from a file (or `Data` spooled to one).
    case upload
}

/// Where a background task is in its life, as ferryd keeps and reports it.
///
/// Valid transitions: `waiting` → `running` | `suspended` | `cancelled`;
/// `running` → `waiting` (retry later) | `suspended` | `completed` | `failed` | `cancelled`;
/// `suspended` → `waiting` | `cancelled`. `completed`, `failed` and `cancelled` are final: the
/// store refuses to move a task out of them. A new state is a new protocol version: older
/// peers refuse values they do not know.
public enum TaskState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Ready to run, or waiting for its begin date, a retry time or a free connection.
    case waiting
    case running
    case suspended
    case completed
    case failed
    case cancelled

    /// Completed, failed or cancelled: the task will not run again.
    public var isFinal: Bool { self == .completed || self == .failed || self == .cancelled }
}
