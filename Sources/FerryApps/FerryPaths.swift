public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where Ferry keeps things, from the environment. ferryd, the library and `ferry apps` all
/// read it the same way, so they agree on the socket and the containers.
///
/// | what | where |
/// |---|---|
/// | data (store, manifests, containers, logs) | `$FERRY_DATA_DIR`, else `$XDG_DATA_HOME/ferry`, else `~/.local/share/ferry` |
/// | runtime (socket, lock) | `$FERRY_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/ferry`, else `/tmp/ferry-<uid>` |
///
/// Empty variables count as unset, and so do relative XDG ones (the XDG spec says to ignore
/// them); a relative `FERRY_*` path is taken from the current directory.
///
/// ```swift
/// let paths = try FerryPaths()          // or FerryPaths(environment: ["FERRY_DATA_DIR": dir, …]) in tests
/// try paths.prepare()
/// let socket = paths.socketURL          // $XDG_RUNTIME_DIR/ferry/ferryd.sock
/// ```
public struct FerryPaths: Sendable, Equatable {
    /// Store, manifests, containers and logs.
    public var dataDirectory: URL
    /// The socket and the lock: `0700`, the user's alone (see ``prepare()``).
    public var runtimeDirectory: URL
    /// Where Foundation keeps `UserDefaults(suiteName:)` on Linux (`<suite>.plist`):
    /// `$XDG_CONFIG_HOME`, else `~/.config` when the data folder is the default one. nil when
    /// it is not known (folders given directly) or would be shared with another data folder
    /// (`FERRY_DATA_DIR` set without `XDG_CONFIG_HOME`): then no group's defaults are linked
    /// (``GroupDefaults``).
    public var configDirectory: URL?

    /// - Throws: ``FerryPathsError`` when no home directory can be found for the data
    ///   directory (no `HOME` and no password entry) and no variable names one.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        func absolute(_ name: String) -> String? { value(name).flatMap { $0.hasPrefix("/") ? $0 : nil } }

        if let runtime = value("FERRY_RUNTIME_DIR") {
            runtimeDirectory = URL(fileURLWithPath: runtime, isDirectory: true)
        } else if let xdg = absolute("XDG_RUNTIME_DIR") {
            runtimeDirectory = URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("ferry", isDirectory: true)
        } else {
            runtimeDirectory = URL(fileURLWithPath: "/tmp/ferry-\(getuid())", isDirectory: true)
        }

        if let data = value("FERRY_DATA_DIR") {
            dataDirectory = URL(fileURLWithPath: data, isDirectory: true)
        } else if let xdg = absolute("XDG_DATA_HOME") {
            dataDirectory = URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("ferry", isDirectory: true)
        } else {
            guard let home = absolute("HOME") ?? Self.passwordHome() else {
                throw FerryPathsError("no home directory: set HOME, XDG_DATA_HOME or FERRY_DATA_DIR")
            }
            dataDirectory = URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".local/share/ferry", isDirectory: true)
        }
        dataDirectory = dataDirectory.standardizedFileURL
        runtimeDirectory = runtimeDirectory.standardizedFileURL
        if let xdg = absolute("XDG_CONFIG_HOME") {
            configDirectory = URL(fileURLWithPath: xdg, isDirectory: true).standardizedFileURL
        } else if value("FERRY_DATA_DIR") == nil, let home = absolute("HOME") ?? Self.passwordHome() {
            configDirectory = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config", isDirectory: true)
        }
    }

    /// Both directories given (tests, `ferryd --data-directory`); the defaults' folder too, if known.
    public init(dataDirectory: URL, runtimeDirectory: URL, configDirectory: URL? = nil) {
        self.dataDirectory = dataDirectory.standardizedFileURL
        self.runtimeDirectory = runtimeDirectory.standardizedFileURL
        self.configDirectory = configDirectory?.standardizedFileURL
    }

    /// ferryd's Unix socket.
    public var socketURL: URL { runtimeDirectory.appendingPathComponent("ferryd.sock") }
    /// The `flock` that keeps one ferryd per user.
    public var lockURL: URL { runtimeDirectory.appendingPathComponent("ferryd.lock") }
    /// ferryd's SQLite store.
    public var storeURL: URL { dataDirectory.appendingPathComponent("ferryd.sqlite") }
    /// Installed manifests, one `<bundle id>.json` each.
    public var appsDirectory: URL { dataDirectory.appendingPathComponent("apps", isDirectory: true) }
    /// Shared containers, one `<group>/` each.
    public var groupsDirectory: URL { dataDirectory.appendingPathComponent("groups", isDirectory: true) }
    /// Files of sessions without an app group, one folder each below this one.
    public var sessionFilesDirectory: URL { dataDirectory.appendingPathComponent("session-files", isDirectory: true) }

    /// Files of a session without an app group (an upload body made from `Data`, a download
    /// ferryd writes): `<data>/session-files/<session>`; the library, the CLI and ferryd all
    /// find them here.
    public func sessionFiles(_ session: String) -> URL {
        sessionFilesDirectory.appendingPathComponent(Self.fileName(session), isDirectory: true)
    }
    /// Where a background upload made from `Data` keeps its body inside the session's
    /// container: `<container>/.ferry/uploads/<session>-<task>.body`. The library writes it
    /// before submitting; ferryd deletes it when the task ends. Ferry's own file, never one
    /// the app named: ferryd deletes a task's body only when it is exactly this path.
    public static func spooledUploadBody(in container: URL, session: String, task: Int) -> URL {
        container.appendingPathComponent(".ferry/uploads/\(fileName(session))-\(task).body")
    }

    /// Launch logs, one `<bundle id>.log` per app.
    public var logsDirectory: URL { dataDirectory.appendingPathComponent("logs", isDirectory: true) }

    /// The shared container of `group` (not created, not checked: see
    /// ``AppRegistry/containerURL(forGroup:for:)`` for the member check). A valid group name
    /// is the folder's name as it is; anything else cannot reach outside `groups/`
    /// (`/` and NUL become `_`, so do leading dots), the same rule as the library's.
    public func containerURL(forGroup group: String) -> URL {
        groupsDirectory.appendingPathComponent(Self.fileName(group), isDirectory: true)
    }

    /// One path component made of an identifier: `/`, NUL and leading dots cannot escape a
    /// folder; at most 200 characters.
    public static func fileName(_ identifier: String) -> String {
        var name = String(identifier.map { $0 == "/" || $0 == "\0" ? "_" : $0 })
        while name.hasPrefix(".") { name = "_" + name.dropFirst() }
        return name.isEmpty ? "_" : String(name.prefix(200))
    }

    /// Creates the runtime and data directories `0700` (their missing parents with the
    /// default mode).
    ///
    /// The runtime directory holds the socket, so it must be the user's alone: an existing
    /// one that is a symlink, belongs to another user, or is open to group or others is
    /// refused, not repaired (someone else may already have put a socket there). This is the
    /// `/tmp/ferry-<uid>` case: anyone can create that name first.
    ///
    /// - Throws: ``FerryPathsError`` naming the directory and the remedy.
    public func prepare() throws {
        try Self.makePrivateDirectory(runtimeDirectory, role: "runtime directory")
        try Self.makePrivateDirectory(dataDirectory, role: "data directory", strict: false)
    }

    /// Creates the data and logs directories (`0700`) where missing and returns the logs one:
    /// where app launches and share extensions write their output.
    ///
    /// - Throws: ``FerryPathsError`` naming the directory that could not be made.
    public func prepareLogsDirectory() throws -> URL {
        try Self.makePrivateDirectory(dataDirectory, role: "data directory", strict: false)
        try Self.makePrivateDirectory(logsDirectory, role: "logs directory", strict: false)
        return logsDirectory
    }

    /// `mkdir 0700`, then `lstat` what is there: race-free, since nothing is followed.
    /// `strict` also refuses a symlink or group/other access (the data directory may be a
    /// link the user made to another disk).
    static func makePrivateDirectory(_ url: URL, role: String, strict: Bool = true) throws {
        let path = url.path
        let parent = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: parent.path) {
            do {
                try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            } catch {
                throw FerryPathsError("cannot create the \(role)'s parent \(parent.path): \(error.localizedDescription)")
            }
        }
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw FerryPathsError("cannot create the \(role) \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw FerryPathsError("cannot inspect the \(role) \(path): \(String(cString: strerror(errno)))")
        }
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK {
            if strict {
                throw FerryPathsError("the \(role) \(path) is a symbolic link; remove it (Ferry creates its own) or set FERRY_RUNTIME_DIR")
            }
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw FerryPathsError("the \(role) \(path) is a symbolic link to something that is not a directory")
            }
        } else if type != S_IFDIR {
            throw FerryPathsError("the \(role) \(path) exists and is not a directory")
        }
        if info.st_uid != getuid() {
            throw FerryPathsError("the \(role) \(path) belongs to uid \(info.st_uid), not to you (uid \(getuid())); remove it or set \(strict ? "FERRY_RUNTIME_DIR" : "FERRY_DATA_DIR")")
        }
        if strict, info.st_mode & 0o077 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw FerryPathsError("the \(role) \(path) is open to other users (mode \(mode)); run `chmod 700 \(path)` if you made it, else remove it")
        }
    }

    /// The home directory from the password database, for a process started without `HOME`.
    private static func passwordHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }
}

/// A directory Ferry cannot use: the message names it and says what to do.
public struct FerryPathsError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
