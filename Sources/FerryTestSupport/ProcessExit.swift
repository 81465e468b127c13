public import Foundation

extension Process {
    /// Starts the process and returns its exit status once it ends, without holding a thread
    /// while it runs: Swift's pool has two threads here, and the test servers answer on them
    /// (a blocked one beside another test's starved them). For a program that execs another,
    /// use ``SpawnedProcess``.
    ///
    /// ```swift
    /// let status = try await convert.runToExit()
    /// ```
    public func runToExit() async throws -> Int32 {
        try await withCheckedThrowingContinuation { (finished: CheckedContinuation<Int32, any Error>) in
            terminationHandler = { finished.resume(returning: $0.terminationStatus) }
            do {
                try run()
            } catch {
                terminationHandler = nil
                finished.resume(throwing: error)
            }
        }
    }
}
