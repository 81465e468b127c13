import Foundation
import NIOConcurrencyHelpers

/// Signals handed to Swift code with no moment in which one is lost.
///
/// `DispatchSource.makeSignalSource` wants the signal ignored (`SIG_IGN`) first and registers
/// it on libdispatch's own thread some time after `resume()` returns, so one that comes in
/// between is dropped; and its handler runs on a global queue that Swift's tasks share. CI
/// once sent the full-screen app a SIGTERM just after it appeared, and it went on running
/// (not reproduced here, by hand or under load). Here `sigaction` puts a handler in place at
/// once; it writes the signal's number to a pipe, and a thread of its own calls the Swift
/// handler.
///
/// ```swift
/// let handling = Signals.handle([SIGTERM, SIGHUP]) { number in exit(128 + number) }
/// defer { handling.stop() }  // back to the default action
/// ```
enum Signals {
    /// One signal set's handling; `stop()` puts their default actions back.
    struct Handling: Sendable {
        let numbers: [Int32]

        func stop() {
            for number in numbers { Signals.install(number, handled: false) }
            Signals.handlers.withLockedValue { handlers in
                for number in numbers { handlers[number] = nil }
            }
        }
    }

    /// Calls `handler` (on the signals' thread) for each of `numbers` that arrives, until stopped.
    static func handle(_ numbers: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) -> Handling {
        startReading
        handlers.withLockedValue { handlers in
            for number in numbers { handlers[number] = handler }
        }
        for number in numbers { install(number, handled: true) }
        return Handling(numbers: numbers)
    }

    fileprivate static let handlers = NIOLockedValueBox<[Int32: @Sendable (Int32) -> Void]>([:])

    /// The pipe and the thread that reads it, made once.
    private static let startReading: Void = {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fatalError("a pipe for signals: errno \(errno)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: a full pipe drops the byte (the signal is already on its way).
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        signalPipe = ends[1]
        let reading = ends[0]
        Thread.detachNewThread {
            // Threads made by Swift's pool block every signal, and so would this one: it takes
            // them, so that some thread always can.
            var accepted = sigset_t()
            sigemptyset(&accepted)
            for number in [SIGINT, SIGTERM, SIGHUP, SIGWINCH] { sigaddset(&accepted, number) }
            pthread_sigmask(SIG_UNBLOCK, &accepted, nil)
            var byte: UInt8 = 0
            while true {
                let count = read(reading, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                let number = Int32(byte)
                if let handler = handlers.withLockedValue({ $0[number] }) { handler(number) }
            }
        }
    }()

    fileprivate static func install(_ number: Int32, handled: Bool) {
        var action = sigaction()
        if handled {
            action.__sigaction_handler.sa_handler = forwardSignal
        } else {
            action.__sigaction_handler.sa_handler = SIG_DFL
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(number, &action, nil)
    }
}

/// Where the handler writes; set once, before any handler is installed.
private nonisolated(unsafe) var signalPipe: Int32 = -1

/// The signal handler itself: only async-signal-safe calls (`write`), errno kept.
private func forwardSignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe, &byte, 1)
    errno = saved
}
