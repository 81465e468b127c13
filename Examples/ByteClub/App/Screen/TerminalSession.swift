import Foundation
import NIOConcurrencyHelpers

/// The terminal while the full-screen app owns it: raw input, the alternate screen, no cursor;
/// everything put back on `leave()` (and before an editor runs, with `suspend`).
final class TerminalSession: Sendable {
    private let saved: termios
    /// While true the key reader leaves standard input alone (an editor is using it).
    private let paused = NIOLockedValueBox(false)
    private let stopped = NIOLockedValueBox(false)
    /// The screen's output, one writer at a time; true once the app has left for good. A
    /// signal's `leave` runs beside the app's drawing: a picture written after it landed on the
    /// user's own screen.
    private let output = NIOLockedValueBox(false)

    init() throws {
        var attributes = termios()
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1, tcgetattr(STDIN_FILENO, &attributes) == 0 else {
            throw TerminalError.notATerminal
        }
        saved = attributes
        enter()
    }

    enum TerminalError: Error, CustomStringConvertible {
        case notATerminal
        var description: String { "the full-screen app needs a terminal; use the commands (`byteclub --help`)" }
    }

    /// Rows and columns now.
    var size: (width: Int, height: Int) {
        var window = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else { return (80, 24) }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    func write(_ text: String) {
        output.withLockedValue { left in
            if !left { FileHandle.standardOutput.write(Data(text.utf8)) }
        }
    }

    private func enter() {
        var raw = saved
        // No echo, no line editing, no signals from keys (Ctrl-C arrives as a key), no CR→NL.
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
    }

    /// Puts the terminal back as it was; `forGood`: the app is ending, and nothing it still
    /// draws reaches the screen.
    func leave(forGood: Bool = false) {
        output.withLockedValue { left in
            guard !left else { return }
            FileHandle.standardOutput.write(Data("\u{1B}[?25h\u{1B}[?1049l".utf8))
            var attributes = saved
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &attributes)
            left = forGood
        }
    }

    /// Gives the terminal to `work` (an editor), then takes it back.
    func suspend<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        paused.withLockedValue { $0 = true }
        leave()
        defer {
            enter()
            paused.withLockedValue { $0 = false }
        }
        return try await withCheckedThrowingContinuation { continuation in
            // A thread of its own: waiting for the editor must not hold a Swift concurrency thread.
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Keys as they are typed, read on a thread of its own (polling every 100 ms so that it
    /// can pause for an editor and stop).
    func keys() -> AsyncStream<Key> {
        AsyncStream { continuation in
            Thread.detachNewThread { [self] in
                var pending: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 256)
                while !stopped.withLockedValue({ $0 }) {
                    if paused.withLockedValue({ $0 }) {
                        usleep(50_000)
                        continue
                    }
                    var reader = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                    guard poll(&reader, 1, 100) > 0 else { continue }
                    if paused.withLockedValue({ $0 }) { continue }  // the editor's keys are the editor's
                    let count = read(STDIN_FILENO, &buffer, buffer.count)
                    if count <= 0 { break }
                    pending += buffer[0..<count]
                    for key in Key.parse(&pending) { continuation.yield(key) }
                }
                continuation.finish()
            }
            continuation.onTermination = { [self] _ in stopped.withLockedValue { $0 = true } }
        }
    }
}
