public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's Chromium, headless, driven through the DevTools protocol (CDP) by a small Python
/// driver (`Tests/Tools/cdp-driver.py`, python3-websocket from `scripts/install-deps`): load
/// a page, wait for an element, type, click with a real mouse event, see which URLs the page
/// requested. Its profile lives in `work`, whose path marks its processes: ``stop()`` leaves
/// none behind.
///
/// ```swift
/// let browser = try await HeadlessChromium.start(work: folder)
/// defer { browser.stop() }
/// let results = try await browser.run([
///     .navigate("http://127.0.0.1:8080/oauth2/authorize?…"), .waitFor("#approve"), .click("#approve"),
///     .waitForRequest(prefix: "http://127.0.0.1:40001/callback"),
/// ])
/// print(results[3] ?? "")   // the callback URL, with its code
/// ```
public final class HeadlessChromium: Sendable {
    /// Where Chromium is installed, if it is.
    public static let executable = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// The driver, beside this package's tests.
    static let driver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Tools/cdp-driver.py").path

    /// Chromium's DevTools port.
    public let port: Int
    /// The folder of its profile and logs; its path is in every Chromium process's command line.
    public let work: String
    let process: SpawnedProcess

    private init(port: Int, work: String, process: SpawnedProcess) {
        self.port = port
        self.work = work
        self.process = process
    }

    /// Headless, no sandbox (tests may run as root), no first-run pages, a profile of its own.
    public static func flags(work: String) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--hide-scrollbars", "--user-data-dir=\(work)/chromium-profile"]
    }

    /// Starts Chromium on `about:blank` with a DevTools port of the system's choosing, and
    /// waits (20 s at most) for it to say which.
    public static func start(work: String) async throws -> HeadlessChromium {
        guard let executable else { throw SpawnError(message: "chromium is not installed: run scripts/install-deps") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
              try SpawnedProcess.start("/usr/bin/python3", ["-c", "import websocket"], log: nil).waitUntilExit() == 0
        else { throw SpawnError(message: "python3-websocket is not installed: run scripts/install-deps") }
        try FileManager.default.createDirectory(atPath: work + "/chromium-profile", withIntermediateDirectories: true)
        let process = try SpawnedProcess.start(
            executable, flags(work: work) + ["--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1000,800", "about:blank"],
            log: URL(fileURLWithPath: work + "/chromium.log"), ownProcessGroup: true)
        let browser: HeadlessChromium
        do {
            let portFile = work + "/chromium-profile/DevToolsActivePort"
            let port = try await eventually("Chromium to write its DevTools port to \(portFile)", timeout: .seconds(20), every: .milliseconds(50),
                                            observed: String(process.output.suffix(800))) { () throws -> Int? in
                guard process.isRunning else { throw SpawnError(message: "chromium exited: \(process.output.suffix(800))") }
                let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
                return text.contains("\n") ? text.split(separator: "\n").first.flatMap { Int($0) } : nil
            }
            browser = HeadlessChromium(port: port, work: work, process: process)
        } catch {
            await Self.stopAll(process, marker: work)
            throw error
        }
        return browser
    }

    /// One action of ``run(_:timeout:)``.
    public enum Step: Sendable {
        case navigate(String)
        /// Until an element matches the CSS selector (`seconds` at most).
        case waitFor(String, seconds: Int = 15)
        /// Focuses the element and types `text` into it.
        case type(_ text: String, into: String)
        /// A mouse click (pressed, released) at the element's centre.
        case click(String)
        /// Until the page requested a URL starting with `prefix` (a redirect counts); its URL.
        case waitForRequest(prefix: String, seconds: Int = 15)
        /// The element's `innerText`, `nil` when there is none.
        case text(String)
        /// A JavaScript expression's value.
        case evaluate(String)

        var json: [String: Any] {
            switch self {
            case .navigate(let url): ["navigate": url]
            case .waitFor(let css, let seconds): ["wait_for": css, "seconds": seconds]
            case .type(let text, let css): ["type": css, "text": text]
            case .click(let css): ["click": css]
            case .waitForRequest(let prefix, let seconds): ["wait_for_request": prefix, "seconds": seconds]
            case .text(let css): ["text": css]
            case .evaluate(let expression): ["eval": expression]
            }
        }
    }

    /// Runs `steps` in order on the browser's page; each step's result as text (`nil` for
    /// null). Throws, with the driver's words, when a step fails or `timeout` runs out.
    @discardableResult
    public func run(_ steps: [Step], timeout: Duration = .seconds(90)) async throws -> [String?] {
        let script = String(decoding: try JSONSerialization.data(withJSONObject: steps.map(\.json)), as: UTF8.self)
        let log = URL(fileURLWithPath: work + "/driver-\(UUID().uuidString.prefix(6)).log")
        let driver = try SpawnedProcess.start("/usr/bin/python3", [Self.driver, String(port), script], log: log)
        defer { driver.kill() }
        let status = try await driver.exit(within: timeout)
        var results: [String?] = []
        for line in driver.output.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            if let error = object["error"] as? String { throw SpawnError(message: "the browser driver failed: \(error)") }
            if object["step"] != nil {
                let value = object["result"]
                results.append(value is NSNull || value == nil ? nil : (value as? String) ?? "\(value!)")
            }
        }
        guard status == 0, results.count == steps.count else {
            throw SpawnError(message: "the browser driver exited \(status) after \(results.count) of \(steps.count) steps: \(driver.output.suffix(2000))")
        }
        return results
    }

    /// Ends Chromium and every process of its profile (SIGKILL), and waits for them to go.
    public func stop() async {
        await Self.stopAll(process, marker: work)
    }

    static func stopAll(_ process: SpawnedProcess, marker: String) async {
        process.kill()
        for _ in 0..<100 where !processes(marker: marker).isEmpty {
            for pid in processes(marker: marker) { kill(pid, SIGKILL) }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// Process ids, other than this one, whose command line contains `marker` (read from /proc).
public func processes(marker: String) -> [pid_t] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return names.compactMap { name in
        guard let pid = pid_t(name), pid != getpid(),
              let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return nil }
        return String(decoding: data, as: UTF8.self).contains(marker) ? pid : nil
    }
}
