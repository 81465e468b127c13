import Foundation

/// A real terminal for tests: a detached tmux session on a server of its own (`-L`), running
/// one command; keys are sent and the screen captured as a person would see it.
///
/// ```swift
/// let tmux = try TmuxSession(environment: env, command: [byteclub], width: 100, height: 30)
/// defer { tmux.kill() }
/// try tmux.press("Down"); try tmux.type("hello")
/// let screen = try await tmux.waitForScreen(containing: "Notes")
/// ```
public struct TmuxSession: Sendable {
    public let socket: String
    public let name = "test"

    /// Starts `command` in a `width` × `height` window; when it ends the pane prints
    /// `exit status N` and stays for a minute, so the test can read it.
    public init(environment: [String: String], command: [String], width: Int = 100, height: Int = 30) throws {
        socket = "ferry-test-\(UUID().uuidString.prefix(8))"
        let exports = environment.map { "export \($0.key)=\(Self.quote($0.value));" }.joined(separator: " ")
        let line = "\(exports) \(command.map(Self.quote).joined(separator: " ")); echo \"exit status $?\"; sleep 60"
        try tmux(["new-session", "-d", "-s", name, "-x", "\(width)", "-y", "\(height)", "sh", "-c", line])
    }

    public static func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Ends the session, then the server. (tmux 3.3a here answered `kill-server` alone with
    /// success and kept running, so a fresh-clone CI left a server and its `sleep 60` behind.)
    public func kill() {
        try? tmux(["kill-session", "-t", name])
        try? tmux(["kill-server"])
        // The server going away this way leaves its socket file behind.
        let folder = ProcessInfo.processInfo.environment["TMUX_TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        unlink("\(folder)/tmux-\(getuid())/\(socket)")
    }

    /// Types `text` literally.
    public func type(_ text: String) throws { try tmux(["send-keys", "-t", name, "-l", text]) }
    /// Presses a key by tmux's name for it (`Enter`, `Down`, `Escape`, `C-c`).
    public func press(_ key: String) throws { try tmux(["send-keys", "-t", name, key]) }

    /// Resizes the window, as a person dragging the terminal's corner would.
    public func resize(width: Int, height: Int) throws {
        try tmux(["resize-window", "-t", name, "-x", "\(width)", "-y", "\(height)"])
    }

    /// The screen, with colours as escape sequences when `escapes`.
    public func screen(escapes: Bool = false) throws -> String {
        try printed(by: ["capture-pane", "-p", "-t", name] + (escapes ? ["-e"] : []))
    }

    /// Whether the pane shows its alternate screen (a full-screen program's, left raw until
    /// it is put back).
    public func showsAlternateScreen() throws -> Bool {
        try printed(by: ["display-message", "-p", "-t", name, "#{alternate_on}"]).trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }

    /// What a tmux command prints.
    private func printed(by arguments: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        try tmux(arguments, output: file)
        return (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }

    /// Polls the screen until it contains `text` and satisfies `also` (up to `timeout`).
    public func waitForScreen(
        containing text: String, escapes: Bool = false, timeout: Duration = .seconds(20), also: (String) -> Bool = { _ in true }
    ) async throws -> String {
        var last = ""
        return try await eventually("the screen to show \(text.debugDescription)", timeout: timeout, every: .milliseconds(100),
                                    observed: "the screen:\n\(last)") {
            last = try screen(escapes: escapes)
            return last.contains(text) && also(last) ? last : nil
        }
    }

    /// Runs `tmux -L socket -f /dev/null ARGUMENTS`, standard output to `output`, and waits for
    /// it: tmux commands answer in milliseconds.
    private func tmux(_ arguments: [String], output: URL? = nil) throws {
        let process = try SpawnedProcess.start("/usr/bin/tmux", ["-L", socket, "-f", "/dev/null"] + arguments, log: output)
        let status = process.waitUntilExit()
        guard status == 0 else { throw SpawnError(message: "tmux \(arguments.first ?? "") failed (exit status \(status))") }
    }
}
