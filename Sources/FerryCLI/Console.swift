import FerrySystem
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

    /// A closed stream has no one to tell; stderr may be a non-blocking pipe (EAGAIN is waited out).
    private static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer) {
        FileDescriptorWrite.all(fd, raw, waitsWhenBusy: true)
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}
