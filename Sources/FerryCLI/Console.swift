import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes to the standard streams without buffering surprises.
enum Console {
    static func error(_ text: String) {
        write(2, text.hasSuffix("\n") ? text : text + "\n")
    }

    static func out(_ text: String) {
        write(1, text.hasSuffix("\n") ? text : text + "\n")
    }

    static func outRaw(_ data: Data) {
        data.withUnsafeBytes { raw in writeAll(1, raw) }
    }

    static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in writeAll(fd, UnsafeRawBufferPointer(buffer)) }
    }

    private static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer) {
        guard var base = raw.baseAddress else { return }
        var left = raw.count
        var attempts = 0
        while left > 0, attempts < 1_000_000 {
            attempts += 1
            let n = Foundation.write(fd, base, left)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            base += n
            left -= n
        }
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}
