import FerrySystem
import Foundation

/// The terminal the compose sheet draws on: raw mode for key-at-a-time input, the window's
/// width, and keys read on a thread of their own (a blocking read must not hold the main actor).
final class Terminal: Sendable {
    enum Key: Equatable, Sendable {
        case text(String)
        case backspace
        case enter
        case escape
        case interrupt      // Ctrl-C / Ctrl-D: cancel, as Esc
        case clearLine      // Ctrl-U
        case left, right
        case home           // Home, Ctrl-A
        case end            // End, Ctrl-E
        case delete         // Delete: the character under the cursor
        case other
    }

    private let saved: termios
    let input: Int32 = STDIN_FILENO
    let output: Int32 = STDOUT_FILENO

    /// Switches standard input to raw mode and the screen to the alternate buffer; fails
    /// when standard input or output is not a terminal.
    init() throws {
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
            throw ShareKitError("the compose sheet needs a terminal (use `ferry share --to BUNDLE_ID --post` in scripts)")
        }
        Self.takeForeground()
        var attributes = termios()
        guard tcgetattr(STDIN_FILENO, &attributes) == 0 else {
            throw ShareKitError("cannot read the terminal's settings: \(String(cString: strerror(errno)))")
        }
        saved = attributes
        var raw = attributes
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        withUnsafeMutableBytes(of: &raw.c_cc) { bytes in
            bytes[Int(VMIN)] = 1
            bytes[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        write("\u{1B}[?1049h\u{1B}[?25l")  // alternate screen, cursor hidden
    }

    /// Makes this process's group the terminal's foreground group, as a job-control shell does
    /// for the job it runs. The share sheet starts an extension in a process group of its own
    /// (Foundation's `Process` does), and a background group gets EIO when it reads the
    /// terminal and is stopped when it changes its settings. SIGTTOU is ignored meanwhile: a
    /// background process may take the terminal only so.
    static func takeForeground() {
        guard tcgetpgrp(STDIN_FILENO) != getpgrp() else { return }
        let previous = signal(SIGTTOU, SIG_IGN)
        _ = tcsetpgrp(STDIN_FILENO, getpgrp())
        signal(SIGTTOU, previous)
    }

    /// Puts the terminal back as it was.
    func restore() {
        write("\u{1B}[?25h\u{1B}[?1049l")
        var attributes = saved
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &attributes)
    }

    /// Columns of the window (80 when the terminal does not say).
    var width: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    func write(_ text: String) {
        Array(text.utf8).withUnsafeBytes { _ = FileDescriptorWrite.all(output, $0) }  // a closed terminal: nothing to tell
    }

    /// Keys as they are typed. One read gives one key press: an escape sequence (an arrow key)
    /// arrives whole, a lone ESC byte is the Esc key.
    func keys() -> AsyncStream<Key> {
        let (stream, continuation) = AsyncStream.makeStream(of: Key.self)
        let input = self.input
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { continuation.finish(); return }
                for key in Terminal.decode(Array(buffer[0..<count])) { continuation.yield(key) }
            }
        }
        thread.start()
        return stream
    }

    /// The keys in one read's bytes: a read may hold several (key repeat, a paste, a terminal
    /// multiplexer's batching), escape sequences among them. A lone ESC ending the read is
    /// the Esc key; `ESC [` runs to its final byte, `ESC O` takes one more; ESC before
    /// anything else (Alt with a key) is `other`.
    static func decode(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var text: [UInt8] = []
        func flush() {
            if !text.isEmpty { keys.append(.text(String(decoding: text, as: UTF8.self))); text = [] }
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == 0x1B {
                flush()
                guard index < bytes.count else { keys.append(.escape); break }
                var end = index + 1  // past the byte after ESC
                if bytes[index] == UInt8(ascii: "[") {
                    while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
                    end = min(end + 1, bytes.count)
                } else if bytes[index] == UInt8(ascii: "O") {
                    end = min(end + 1, bytes.count)
                }
                keys.append(escapeSequence(Array(bytes[(index - 1)..<end])))
                index = end
                continue
            }
            switch byte {
            case 0x7F, 0x08: flush(); keys.append(.backspace)
            case 0x0D, 0x0A: flush(); keys.append(.enter)
            case 0x03, 0x04: flush(); keys.append(.interrupt)
            case 0x15: flush(); keys.append(.clearLine)
            case 0x01: flush(); keys.append(.home)
            case 0x05: flush(); keys.append(.end)
            case 0x00..<0x20: flush(); keys.append(.other)
            default: text.append(byte)
            }
        }
        flush()
        return keys
    }

    /// The key an escape sequence stands for, as xterm and the Linux console send them
    /// (`ESC [ D`, `ESC O H`, `ESC [ 3 ~`…); up, down and the rest are `other`.
    static func escapeSequence(_ bytes: [UInt8]) -> Key {
        switch String(decoding: bytes.dropFirst(), as: UTF8.self) {
        case "[D", "OD": .left
        case "[C", "OC": .right
        case "[H", "OH", "[1~", "[7~": .home
        case "[F", "OF", "[4~", "[8~": .end
        case "[3~": .delete
        default: .other
        }
    }
}
