#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Signals handed to Swift code with no moment in which one is lost: the project's one way
/// of catching a signal (Ctrl-C, SIGTERM, a resize).
///
/// `DispatchSource.makeSignalSource` wants the signal ignored (`SIG_IGN`) first and registers
/// it on libdispatch's own thread some time after `resume()` returns, so one that comes in
/// between is dropped; and its handler runs on a global queue that Swift's tasks share. CI
/// once sent byteclub's full-screen app a SIGTERM just after it appeared, and it went on
/// running (not reproduced by hand or under load). Here `sigaction` puts a handler in place
/// before `handle` returns; it writes the signal's number to a pipe, and a thread of its own
/// calls the Swift handlers.
///
/// ```swift
/// let handling = Signals.handle([SIGTERM, SIGHUP]) { number in exit(128 + number) }
/// defer { handling.stop() }  // the default action again, once no one else handles them
/// ```
package enum Signals {
    /// One call's handling of its signals; `stop()` ends it.
    package struct Handling: Sendable {
        let token: Int
        let numbers: [Int32]

        /// Stops calling this handler; a signal nobody handles any more gets its default action.
        package func stop() {
            let unhandled = Signals.registry.withLock { $0.remove(token, from: numbers) }
            for number in unhandled { Signals.install(number, handled: false) }
        }
    }

    /// Calls `handler` on the signals' thread for each of `numbers` that arrives, until stopped.
    /// Several handlers of one signal are all called, in the order they were added.
    package static func handle(_ numbers: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) -> Handling {
        _ = readingEnd  // the pipe and its reader exist before any handler writes to it
        let token = registry.withLock { $0.add(handler, for: numbers) }
        for number in numbers { install(number, handled: true) }
        return Handling(token: token, numbers: numbers)
    }

    private struct Registry {
        var nextToken = 0
        var handlers: [Int32: [(token: Int, call: @Sendable (Int32) -> Void)]] = [:]

        mutating func add(_ call: @escaping @Sendable (Int32) -> Void, for numbers: [Int32]) -> Int {
            nextToken += 1
            for number in numbers { handlers[number, default: []].append((nextToken, call)) }
            return nextToken
        }

        /// Removes `token`'s handlers; returns the signals left with none.
        mutating func remove(_ token: Int, from numbers: [Int32]) -> [Int32] {
            numbers.filter { number in
                handlers[number]?.removeAll { $0.token == token }
                guard handlers[number]?.isEmpty ?? true else { return false }
                handlers[number] = nil
                return true
            }
        }
    }

    private static let registry = Mutex(Registry())

    /// The pipe's read end, and the thread that reads it (made once).
    private static let readingEnd: Int32 = {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fatalError("a pipe for signals: errno \(errno)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: with the pipe full, the byte is dropped (at least
        // 4,096 signals are already waiting to be handled).
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        signalPipe.store(ends[1], ordering: .releasing)
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { _ in
            Signals.readSignals()
            return nil
        }, nil)
        guard started == 0 else { fatalError("a thread for signals: error \(started)") }
        pthread_detach(thread)
        return ends[0]
    }()

    /// The reader thread's loop: each byte is a signal's number; its handlers are called here.
    private static func readSignals() {
        // Threads of Swift's pool block every signal, and this one was made by one of them: it
        // takes the signals it handles, so that some thread always can.
        var accepted = sigset_t()
        sigemptyset(&accepted)
        for number in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH] { sigaddset(&accepted, number) }
        pthread_sigmask(SIG_UNBLOCK, &accepted, nil)
        var byte: UInt8 = 0
        while true {
            let count = read(readingEnd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            let number = Int32(byte)
            let calls = registry.withLock { $0.handlers[number]?.map(\.call) ?? [] }
            for call in calls { call(number) }
        }
    }

    fileprivate static func install(_ number: Int32, handled: Bool) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handled ? forwardSignal : SIG_DFL
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(number, &action, nil)
    }
}

/// Where the signal handler writes: set once, before any handler is installed.
private let signalPipe = Atomic<Int32>(-1)

/// The signal handler itself: async-signal-safe calls only (an atomic load, `write`); errno kept.
private func forwardSignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe.load(ordering: .acquiring), &byte, 1)
    errno = saved
}
