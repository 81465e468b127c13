import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `/` page in a real browser: headless Chromium from Debian (`scripts/install-deps`) signs
/// in, renders the notes, the photo grid and the bins, and takes a screenshot; its DOM and the
/// thumbnails it loaded are checked, and the screenshot must not be blank
/// (`BYTECLUB_KEEP_SCREENSHOT=/tmp/page.png` keeps a copy to look at).
@Suite("The page in headless Chromium", .serialized)
struct BrowserPageTests {
    static let chromium = HeadlessChromium.executable
    static let identify = "/usr/bin/identify"  // ImageMagick, to count the screenshot's colours

    @Test func pageShowsNotesThumbnailsAndBinsInChromium() async throws {
        let chromium = try #require(Self.chromium, "chromium is not installed: run scripts/install-deps")
        let work = try TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try await TestServer.with { server in
            // A note, a photo through the files API, an image through the images API, a bin.
            #expect(try await server.put("/1/files_put/dropbox/Notes/Groceries.txt", Array("milk\neggs\nbread".utf8)).status == 200)
            #expect(try await server.put("/1/files_put/dropbox/Photos/beach.png", TestImages.png(width: 640, height: 420)).status == 200)
            let image = try await server.request(.POST, "/3/image?title=Sunset", headers: [
                ("Authorization", "Client-ID \(server.clientID)"), ("Content-Type", "image/png"),
            ], body: TestImages.png(width: 400, height: 400), auth: false)
            let imageID = try #require((image.object["data"] as? [String: Any])?["id"] as? String)
            let bin = try #require(try await server.request(.POST, "/bins", auth: false).object["id"] as? String)

            // Signing in is a redirect that sets the cookie; Chromium follows it to `/`.
            let url = "\(server.base)/?access_token=\(server.token)"
            let screenshot = work + "/page.png"
            _ = try await Self.run(chromium, Self.chromiumFlags(work) + ["--window-size=1200,900", "--screenshot=\(screenshot)", url],
                                   seconds: 60, marker: work)
            let dom = try await Self.run(chromium, Self.chromiumFlags(work) + ["--dump-dom", url], seconds: 60, marker: work)
            #expect(processes(marker: work).isEmpty, "no Chromium process is left behind")

            // The DOM: the note, one thumbnail per image, the bin's link.
            #expect(dom.contains("Signed in as <b>dev</b>"))
            #expect(dom.contains("<h3>/Notes/Groceries.txt</h3>"))
            #expect(dom.contains("milk\neggs\nbread"))
            let sources = try Regex(#"<img src="([^"]+)""#).matchesOf(dom)
            #expect(sources == ["/1/thumbnails/dropbox/Photos/beach.png?size=m", "/i/\(imageID)m.jpg"])
            #expect(dom.contains("<a href=\"/bins/\(bin)?inspect\">\(bin)</a>"))

            // Each thumbnail answers 200 with an image no larger than its box.
            for source in sources {
                let reply = try await server.get(source, headers: [("Cookie", "byteclub_token=\(server.token)")], auth: false)
                #expect(reply.status == 200, "\(source)")
                #expect(reply.header("Content-Type")?.hasPrefix("image/") == true, "\(source)")
                let size = try #require(TestImages.jpegSize(reply.body) ?? TestImages.pngSize(reply.body), "\(source) is a JPEG or PNG")
                #expect(size.width <= 320 && size.height <= 320 && size.width > 0, "\(source): \(size)")
            }

            // The screenshot: the window's size, and far from one flat colour (the gradients
            // of the two thumbnails alone have thousands).
            let png = try #require(FileManager.default.contents(atPath: screenshot), "the screenshot was written")
            if let keep = ProcessInfo.processInfo.environment["BYTECLUB_KEEP_SCREENSHOT"] {  // to look at it
                try? FileManager.default.removeItem(atPath: keep)
                try FileManager.default.copyItem(atPath: screenshot, toPath: keep)
            }
            #expect(TestImages.pngSize(Array(png))! == (1200, 900))
            let colours = try await Self.run(Self.identify, ["-format", "%k", screenshot], seconds: 30, marker: screenshot)
            #expect((Int(colours) ?? 0) > 1000, "the screenshot is not blank: \(colours) colours")
        }
    }

    static func chromiumFlags(_ work: String) -> [String] { HeadlessChromium.flags(work: work) }

    /// Runs `executable` under timeout(1), which after `seconds` kills it and every process in
    /// its group (Chromium's helpers too); waits with async sleeps, never blocking a
    /// cooperative thread. Afterwards nothing whose command line names `marker` is left
    /// running: such processes get 5 s to exit, then SIGKILL. Returns the standard output.
    static func run(_ executable: String, _ arguments: [String], seconds: Int, marker: String) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("byteclub-test-out-\(UUID().uuidString.prefix(8))").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["--kill-after=5", String(seconds), executable] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.run()
        do {
            // timeout(1) ends it after `seconds`, and kills it 5 s later: 10 s more for slack.
            try await poll(until: "\(executable) to end (under timeout(1))", timeout: .seconds(seconds + 15), every: .milliseconds(50)) {
                !process.isRunning
            }
        } catch {
            await stopAll(marker: marker, process)
            throw error
        }
        await stopAll(marker: marker, process)
        guard process.terminationStatus == 0 else {
            throw TestFailure("\(executable) exited with \(process.terminationStatus)\(process.terminationStatus == 124 ? " (timed out)" : "")")
        }
        return try String(contentsOfFile: output, encoding: .utf8)
    }

    /// Ends `process` and the processes naming `marker`: 5 s to exit by themselves, then SIGKILL
    /// by process id, then up to 5 s for them to go.
    static func stopAll(marker: String, _ process: Process) async {
        for _ in 0..<100 where process.isRunning || !processes(marker: marker).isEmpty {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for pid in processes(marker: marker) { kill(pid, SIGKILL) }
        for _ in 0..<100 where process.isRunning || !processes(marker: marker).isEmpty {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

extension Regex<AnyRegexOutput> {
    /// The first capture group of every match in `text`.
    func matchesOf(_ text: String) -> [String] {
        text.matches(of: self).compactMap { $0.output[1].substring.map(String.init) }
    }
}
