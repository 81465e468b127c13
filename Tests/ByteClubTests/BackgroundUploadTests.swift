import ByteClubKit
import FerryTestSupport
import Foundation
import Testing

/// `byteclub photos upload --background`: the command hands the uploads to ferryd and returns;
/// ferryd uploads them, finds nobody connected and starts `byteclub` (installed with its
/// manifest through the real `ferry apps install`), which records each ending once.
@Suite("byteclub background uploads", .serialized)
struct BackgroundUploadTests {
    @Test("uploads handed to ferryd are stored; ferryd starts byteclub, and history shows each once with its status and name")
    func handedOffAndRelaunched() async throws {
        try await ClubFixture.with { club in
            try await Self.installApp(club)
            for name in ["one.jpg", "two.jpg"] {
                try await TestImages.convert(["-size", "200x150", "gradient:red-blue", club.file(name).path])
            }
            // A name already taken: the service stores the second one as `one (1).jpg`.
            let me = ByteClub(account: ByteClubAccount(server: club.server, accessToken: ClubFixture.token))
            _ = try await me.uploadPhoto(club.file("one.jpg"))

            let started = ContinuousClock.now
            let handed = try await club.run(["photos", "upload", "--background", "one.jpg", "two.jpg"])
            #expect(handed.status == 0, "\(handed.output)")
            #expect(handed.output.contains("handed two.jpg to ferryd"), "\(handed.output)")
            let outcomes = try await eventually("ferryd's launch of byteclub to record both uploads", timeout: .seconds(60), every: .milliseconds(100),
                                                observed: Self.daemonLog(club)) { () -> [UploadOutcome]? in
                let outcomes = try History(paths: ByteClubPaths(environment: club.environment())).read()
                return outcomes.count >= 2 ? outcomes : nil
            }
            #expect(outcomes.map(\.status) == [200, 200], "\(outcomes)")
            #expect(Set(outcomes.compactMap(\.storedAs)) == ["one (1).jpg", "two.jpg"], "\(outcomes)")
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < .seconds(60))
            #expect(Self.daemonLog(club).contains("launch"), "ferryd launched the app: \(Self.daemonLog(club))")

            let history = try await club.run(["history"])
            let rows = history.output.split(separator: "\n")
            #expect(rows.count == 2 && rows.allSatisfy { $0.contains("HTTP 200") }, "each upload once: \(history.output)")
            #expect(history.output.contains("stored as one (1).jpg"), "\(history.output)")
            let listed = try await club.run(["photos", "--json", "--no-thumbnails"])
            #expect(listed.output.contains("\"name\" : \"two.jpg\""), "\(listed.output)")
        }
    }

    @Test("a background upload handed over while the server is down goes on when it is back")
    func serverDownThenBack() async throws {
        try await ClubFixture.with(stablePort: true) { club in
            try await Self.installApp(club)
            try await TestImages.convert(["-size", "200x150", "gradient:green-white", club.file("late.jpg").path])
            let port = club.server.port!
            club.serverProcess.kill()
            let handed = try await club.run(["photos", "upload", "--background", "late.jpg"])
            #expect(handed.status == 0, "handing over needs no server: \(handed.output)")
            try await Task.sleep(for: .seconds(2))
            #expect(try History(paths: ByteClubPaths(environment: club.environment())).read().isEmpty, "nothing has ended while the server is down")

            let (again, _) = try await ClubFixture.startServer(root: club.root, port: port)
            defer { again.kill() }
            let outcome = try await eventually("the upload to reach the server once it is back", timeout: .seconds(90), every: .milliseconds(200),
                                               observed: Self.daemonLog(club)) {
                try History(paths: ByteClubPaths(environment: club.environment())).read().first
            }
            #expect(outcome.status == 200 && outcome.storedAs == "late.jpg", "\(outcome)")
        }
    }

    /// The app's manifest, installed with the real `ferry apps install` into the fixture's ferryd folders.
    static func installApp(_ club: ClubFixture) async throws {
        let binary = try BuiltProducts.path(of: "byteclub")
        let manifest = club.root.appendingPathComponent("byteclub-manifest.json")
        let template = try String(contentsOf: Self.repository.appendingPathComponent("Examples/ByteClub/manifest.json"), encoding: .utf8)
        try template.replacingOccurrences(of: "@BIN@/byteclub", with: binary).write(to: manifest, atomically: true, encoding: .utf8)
        let ferry = try SpawnedProcess.start(try BuiltProducts.path(of: "ferry"), ["apps", "install", manifest.path],
                                             environment: club.ferryEnvironment, log: club.root.appendingPathComponent("ferry-apps.log"))
        #expect(try await ferry.exit(within: .seconds(30)) == 0, "ferry apps install: \(ferry.output)")
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func daemonLog(_ club: ClubFixture) -> String {
        let logs = club.root.appendingPathComponent("ferry/data/logs")
        let files = (try? FileManager.default.contentsOfDirectory(at: logs, includingPropertiesForKeys: nil)) ?? []
        return files.map { "\($0.lastPathComponent): " + ((try? String(contentsOf: $0, encoding: .utf8)) ?? "") }.joined(separator: "\n").suffix(3000).description
    }
}
