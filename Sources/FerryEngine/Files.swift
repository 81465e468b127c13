import FerryCore
import FerrySystem
package import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file opened for reading by position. Plain POSIX calls: reads are small (256 KiB)
/// and local, and the descriptor is owned by exactly one body stream at a time.
final class InputFile: @unchecked Sendable {  // the fd is only used by one iterator at a time
    let url: URL
    private let fd: Int32
    let size: Int64

    init(url: URL) throws {
        self.url = url
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw FerryError(
                code == ENOENT ? .fileDoesNotExist : .cannotReadFile,
                "cannot open \(url.path) for reading: \(String(cString: strerror(code)))",
                url: url)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            throw FerryError(.cannotReadFile, "\(url.path) is not a regular file", url: url)
        }
        self.fd = fd
        self.size = Int64(info.st_size)
    }

    func read(at offset: Int64, upTo count: Int) throws -> ByteBuffer {
        var none: ByteBuffer? = nil
        return try read(at: offset, upTo: count, reusing: &none)
    }

    /// As `read(at:upTo:)`, refilling `previous` when nobody else holds it any more
    /// (`clear()` keeps uniquely owned storage and allocates anew otherwise).
    func read(at offset: Int64, upTo count: Int, reusing previous: inout ByteBuffer?) throws -> ByteBuffer {
        var buffer: ByteBuffer
        if var reused = previous {
            previous = nil
            reused.clear()
            buffer = reused
        } else {
            buffer = ByteBufferAllocator().buffer(capacity: count)
        }
        let got = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw -> Int in
            while true {
                let n = pread(fd, raw.baseAddress, count, off_t(offset))
                if n >= 0 { return n }
                if errno == EINTR { continue }
                throw FerryError(.cannotReadFile, "reading \(url.path) failed: \(String(cString: strerror(errno)))", url: url)
            }
        }
        _ = got
        return buffer
    }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}

/// A file that a download writes sequentially: appends at its end, truncates to restart.
package final class OutputFile: @unchecked Sendable {  // used by one download at a time
    let url: URL
    private let fd: Int32
    private(set) var size: Int64

    /// Opens (creating, `0600`) the file; keeps what it holds so a download can continue.
    init(url: URL) throws {
        self.url = url
        let fd = open(url.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw OutputFile.error("cannot create \(url.path)", url: url)
        }
        self.fd = fd
        var info = stat()
        fstat(fd, &info)
        self.size = Int64(info.st_size)
    }

    static func error(_ what: String, url: URL) -> FerryError {
        error(what, url: url, code: errno)
    }

    /// With `code` read right after the failing call: building a file URL may `stat` and
    /// overwrite `errno`.
    package static func error(_ what: String, url: URL, code: Int32) -> FerryError {
        let reason = code == ENOSPC ? "the disk is full" : String(cString: strerror(code))
        return FerryError(.cannotWriteToFile, "\(what): \(reason)", url: url)
    }

    func truncate(to length: Int64) throws {
        // An empty file stays empty without a call. Not only cheaper: on ext4, truncating to
        // zero (even a file that already is empty) arms auto_da_alloc, and close() then
        // starts writeback of the whole download (measured: ~4% of a 16 KiB download).
        if length == 0, size == 0 { return }
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw OutputFile.error("cannot truncate \(url.path)", url: url)
        }
        size = length
    }

    func append(_ buffer: ByteBuffer) throws {
        if let code = buffer.withUnsafeReadableBytes({ FileDescriptorWrite.all(fd, $0, at: size) }) {
            throw OutputFile.error("cannot write \(url.path)", url: url, code: code)
        }
        size += Int64(buffer.readableBytes)
    }

    func sync() throws {
        guard fsync(fd) == 0 else { throw OutputFile.error("cannot flush \(url.path)", url: url) }
    }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}

func fileSize(_ url: URL) -> Int64? {
    var info = stat()
    guard stat(url.path, &info) == 0 else { return nil }
    return Int64(info.st_size)
}
