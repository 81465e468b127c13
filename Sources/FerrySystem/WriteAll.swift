#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes every byte of `bytes` to `fd`, continuing after partial writes and interruptions
/// (`EINTR`): the one write loop of the project (files, terminals, sockets, stderr).
///
/// ```swift
/// if let code = data.withUnsafeBytes({ FileDescriptorWrite.all(fd, $0) }) { throw POSIXFailure("write", code) }
/// ```
package enum FileDescriptorWrite {
    /// Writes at the file's position (or at `offset` with `pwrite`). Returns nil when all
    /// bytes were written, else the `errno` of the failing call.
    ///
    /// `waitsWhenBusy`: a non-blocking descriptor answering `EAGAIN` is asked again (stderr
    /// may be a non-blocking pipe); bounded, so a reader that never drains cannot hang us.
    @discardableResult
    package static func all(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil, waitsWhenBusy: Bool = false) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var done = 0
        var busyRounds = 0
        while done < bytes.count {
            let n: Int
            if let offset {
                n = pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
            } else {
                n = write(fd, base + done, bytes.count - done)
            }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN, waitsWhenBusy, busyRounds < 1_000_000 {
                    busyRounds += 1
                    continue
                }
                return code
            }
            if n == 0 { return EIO }  // a regular file or pipe never takes 0 bytes of a non-empty write
            done += n
        }
        return nil
    }
}
