import FerryApps
import Foundation

/// The systemd user units that keep ferryd there: a socket unit that owns ferryd's socket (a
/// client's first connection starts ferryd) and a service that restarts it after a crash and
/// starts it at login, so queued work resumes without any client. `ferry daemon install`
/// writes them; ferryd adopts the socket (`LISTEN_FDS`, `DaemonServer.systemdSocket`).
///
/// ```swift
/// let units = SystemdUnits(ferryd: "/usr/local/bin/ferryd", paths: try FerryPaths())
/// try units.socket.write(to: folder.appendingPathComponent(SystemdUnits.socketName), atomically: true, encoding: .utf8)
/// ```
struct SystemdUnits {
    static let socketName = "ferryd.socket"
    static let serviceName = "ferryd.service"
    static let header = "# Written by `ferry daemon install`; `ferry daemon uninstall` removes it."

    var ferryd: String
    var paths: FerryPaths

    var socket: String {
        """
        \(Self.header)
        [Unit]
        Description=Ferry background transfers: ferryd's socket

        [Socket]
        ListenStream=\(Self.escaped(paths.socketURL.path))
        SocketMode=0600
        DirectoryMode=0700
        RemoveOnStop=yes

        [Install]
        WantedBy=sockets.target

        """
    }

    var service: String {
        """
        \(Self.header)
        [Unit]
        Description=Ferry background transfers: ferryd
        Requires=\(Self.socketName)
        After=\(Self.socketName)

        [Service]
        ExecStart=\(Self.commandLine([ferryd, "--runtime-directory", paths.runtimeDirectory.path, "--data-directory", paths.dataDirectory.path]))
        # A crash (a signal, an exit status other than 0) is restarted; `ferry daemon stop` exits 0.
        Restart=on-failure
        RestartSec=1

        [Install]
        # At login too, not only at a client's first connection: queued work resumes by itself.
        WantedBy=default.target
        Also=\(Self.socketName)

        """
    }

    /// `%` starts a specifier in unit files.
    static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "%", with: "%%")
    }

    /// A command line for `ExecStart=`: each word quoted when it holds a space, quote or backslash.
    static func commandLine(_ words: [String]) -> String {
        words.map { word in
            let plain = escaped(word)
            guard word.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" || $0 == "\t" }) else { return plain }
            return "\"" + plain.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }.joined(separator: " ")
    }
}
