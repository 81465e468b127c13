import FerryTestSupport
import Foundation
import Testing

/// `ferryd --metrics-address`: the Prometheus text over HTTP, as curl (a scraper) gets it.
@Suite("Metrics over HTTP")
struct MetricsListenerTests {
    @Test("GET /metrics answers the figures ferry daemon metrics prints; HEAD has no body; other paths 404, other methods 405")
    func scrape() async throws {
        let ferryd = try FerrydProcess()
        defer { ferryd.cleanUp() }
        ferryd.extraArguments = ["--metrics-address", "127.0.0.1:0"]
        try await ferryd.start()
        let url = try await eventually("ferryd to log its metrics URL", timeout: .seconds(10), observed: ferryd.log.suffix(800).description) {
            ferryd.log.split(separator: "\n").first { $0.contains("metrics over HTTP") }
                .flatMap { line in line.split(separator: " ").first { $0.hasPrefix("url=") }.map { String($0.dropFirst(4)) } }
        }
        let scraped = try await curl(["-sS", "-D", "-", url], ferryd)
        #expect(scraped.contains("HTTP/1.1 200 OK"), "\(scraped)")
        #expect(scraped.contains("text/plain; version=0.0.4"))
        #expect(scraped.contains("ferryd_tasks") && scraped.contains("ferryd_resident_memory_bytes"), "\(scraped.prefix(600))")
        let head = try await curl(["-sS", "-I", url], ferryd)
        #expect(head.contains("200 OK") && !head.contains("ferryd_tasks"))
        let other = try await curl(["-sS", "-o", "/dev/null", "-w", "%{http_code}", url.replacingOccurrences(of: "/metrics", with: "/other")], ferryd)
        #expect(other == "404")
        let post = try await curl(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", url], ferryd)
        #expect(post == "405")
        // A scraper that connected and sends nothing must not hold ferryd's stop.
        let port = try #require(URL(string: url)?.port)
        let silent = try SpawnedProcess.start(
            "/usr/bin/python3", ["-c", "import socket, time; s = socket.create_connection(('127.0.0.1', \(port))); print('connected', flush=True); time.sleep(60)"],
            log: ferryd.root.appendingPathComponent("silent.out"))
        defer { silent.kill() }
        try await poll(until: "the silent client to connect", timeout: .seconds(10)) { silent.output.contains("connected") }
        let stopping = ContinuousClock.now
        #expect(try await ferryd.terminate() == 0, "SIGTERM stops ferryd with its metrics listener: \(ferryd.log.suffix(800))")
        #expect(ContinuousClock.now - stopping < .seconds(5), "the silent connection did not hold the stop")
    }

    func curl(_ arguments: [String], _ ferryd: FerrydProcess) async throws -> String {
        let out = ferryd.root.appendingPathComponent("curl-\(UUID().uuidString.prefix(6)).out")
        let curl = try SpawnedProcess.start("/usr/bin/curl", arguments, log: out)
        #expect(try await curl.exit(within: .seconds(20)) == 0, "curl \(arguments): \(curl.output)")
        return curl.output
    }
}
