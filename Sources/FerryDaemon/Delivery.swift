import FerrySystem
import Foundation
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Putting a finished download where its task asked (`TaskOptions.deliverTo`): the check at
/// submission, and the move at completion. ferryd is the user's own process, so what it may
/// write is what the user may.
///
/// The rule, once: a file already at the path is never replaced; the download takes the first
/// free name beside it, as browsers do (`photo.jpg` → `photo (1).jpg`, `src.tar.gz` →
/// `src (1).tar.gz`, up to `(999)`). On the same file system the file is linked under the new
/// name and its old name removed (a link, unlike a rename, fails when the name is taken, so
/// nothing is replaced even in a race); on another one it is copied into a file created with
/// `O_EXCL`, synced, and then the original is removed.
///
/// ```swift
/// if let problem = await Delivery.problem(with: "/home/me/big.iso") { throw FerryProtocolError(.cannotWriteToFile, problem) }
/// let placed = try await Delivery.move("/home/me/.local/share/ferry/session-files/ferry.cli/downloads/4.download", to: "/home/me/big.iso")
/// ```
enum Delivery {
    /// Why a delivery did not happen, for a person.
    struct Failure: Error {
        var message: String
    }

    /// How many numbered names beside the asked one are tried.
    static let maximumNumber = 999

    /// The mode of a delivered file: a new file's, 0666 less ferryd's umask (which it has from
    /// the process that started it), as `ferry get` and curl make them. While it downloads,
    /// ferryd keeps the file `0600` in its own folder.
    static let fileMode: mode_t = {
        // Read, not set and restored: umask(2) is process-wide, and ferryd's other threads create
        // files meanwhile. Linux says it in /proc/self/status ("Umask:\t0022").
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        let mask = line.flatMap { mode_t($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0o022
        return 0o666 & ~mask
    }()

    /// What keeps ferryd from delivering a file to `path` (its folder is missing or not
    /// writable, or the path is a folder); nil when nothing does. A file already there is no
    /// problem: the download takes a free name beside it.
    static func problem(with path: String) async -> String? {
        // File-system calls can hang (a stale network mount): not on the daemon's actor.
        do {
            return try await NIOThreadPool.singleton.runIfActive { checkBlocking(path) }
        } catch {
            return "cannot check \(path): \(error)"
        }
    }

    private static func checkBlocking(_ path: String) -> String? {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            return "\(path) is a folder: name the file to write inside it"
        }
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) else {
            return "cannot write \(path): the folder \(folder) does not exist"
        }
        guard isFolder.boolValue else { return "cannot write \(path): \(folder) is not a folder" }
        guard access(folder, W_OK | X_OK) == 0 else {
            return "cannot write \(path): \(String(cString: strerror(errno))) (the folder \(folder))"
        }
        return nil
    }

    /// Moves `file` to `target`, or to the first free name beside it, and returns the path it
    /// took. Runs on NIO's blocking-I/O thread pool: a copy to another file system takes a
    /// while, and must not hold one of Swift concurrency's few threads (or the daemon's actor).
    static func move(_ file: String, to target: String) async throws(Failure) -> String {
        do {
            return try await NIOThreadPool.singleton.runIfActive { try placeBlocking(file, to: target) }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(message: "cannot deliver the download to \(target): \(error)")
        }
    }

    private static func placeBlocking(_ file: String, to target: String) throws(Failure) -> String {
        for candidate in names(for: target) {
            if link(file, candidate) == 0 {
                unlink(file)
                chmod(candidate, fileMode)
                return candidate
            }
            let code = errno
            switch code {
            case EEXIST:
                continue
            case EXDEV, EPERM, EOPNOTSUPP, EMLINK:  // another file system, or one without hard links
                if try copy(file, to: candidate) {
                    unlink(file)
                    return candidate
                }
            default:
                throw Failure(message: "cannot deliver the download to \(candidate): \(String(cString: strerror(code)))")
            }
        }
        throw Failure(message: "cannot deliver the download to \(target): it and the \(maximumNumber) numbered names beside it are taken")
    }

    /// `target`, then `name (1).ext` … `name (999).ext` in the same folder.
    static func names(for target: String) -> some Sequence<String> {
        let url = URL(fileURLWithPath: target)
        let (stem, suffix) = split(url.lastPathComponent)
        let folder = url.deletingLastPathComponent()
        return (0...maximumNumber).lazy.map { number in
            number == 0 ? target : folder.appendingPathComponent("\(stem) (\(number))\(suffix)").path
        }
    }

    /// A file name's stem and its extension with the dot (`.tar.gz` kept whole); a leading dot
    /// starts no extension.
    static func split(_ name: String) -> (stem: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        var stem = String(name[..<dot])
        var suffix = String(name[dot...])
        if stem.count > 4, stem.lowercased().hasSuffix(".tar") {
            suffix = String(stem.suffix(4)) + suffix
            stem.removeLast(4)
        }
        return (stem, suffix)
    }

    /// Copies `file` into a new file at `target`, synced. False when `target` exists (nothing
    /// was written); a failure leaves no partial copy.
    private static func copy(_ file: String, to target: String) throws(Failure) -> Bool {
        let source = open(file, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw failure("read", file, errno) }
        defer { close(source) }
        let destination = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        guard destination >= 0 else {
            let code = errno
            if code == EEXIST { return false }
            throw failure("create", target, code)
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var problem: Int32?
        while problem == nil {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { problem = errno; break }
            if count == 0 { break }
            problem = buffer.withUnsafeBytes { FileDescriptorWrite.all(destination, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        if problem == nil, fsync(destination) != 0 { problem = errno }
        close(destination)
        if let problem {
            unlink(target)
            throw failure("copy the download to", target, problem)
        }
        return true
    }

    private static func failure(_ verb: String, _ path: String, _ code: Int32) -> Failure {
        Failure(message: "cannot \(verb) \(path): \(String(cString: strerror(code)))")
    }
}
