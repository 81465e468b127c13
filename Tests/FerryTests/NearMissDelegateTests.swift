import FerryTestSupport
import Foundation
import Testing

/// A delegate method that nearly matches a URLSession requirement (a wrong type or label) is
/// never called. The Swift compiler warns about it when the conformance is declared in an
/// extension holding the methods; in the class's own body only Ferry's DelegateCheck plugin
/// does. These compile such delegates against the Ferry module this build made and read the
/// warnings: the compiler's, and the plugin's in a package that uses it.
@Suite("Near-miss delegate methods")
struct NearMissDelegateTests {
    static let delegate = """
        import Foundation
        import Ferry

        final class Uploads: NSObject, @unchecked Sendable {}

        extension Uploads: URLSessionDataDelegate {
            // Ferry's error type where URLSession's has Error?: never called.
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: FerryError?) {}
            // A misspelt label: never called.
            func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didRecieve data: Data) {}
            // Right: no warning.
            func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
                            totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
        }
        """

    @Test("a wrong type and a misspelt label are compiler warnings naming the requirement; a right method is not")
    func nearMissesWarn() async throws {
        let work = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let source = work.appendingPathComponent("Uploads.swift")
        try Self.delegate.write(to: source, atomically: true, encoding: .utf8)
        let log = work.appendingPathComponent("swiftc.log")
        let swiftc = try SpawnedProcess.start("/usr/bin/env", ["swiftc", "-typecheck"] + (try Self.ferryModuleFlags()) + [source.path], log: log)
        let status = try await swiftc.exit(within: .seconds(120))
        let output = swiftc.output
        #expect(status == 0, "the delegate compiles: \(output.prefix(2000))")
        let warnings = output.split(separator: "\n").filter { $0.hasPrefix(source.path) && $0.contains("warning:") }
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.contains { $0.contains(":8:") && $0.contains("nearly matches defaulted requirement 'urlSession(_:task:didCompleteWithError:)'") })
        #expect(warnings.contains { $0.contains(":10:") && $0.contains("nearly matches defaulted requirement 'urlSession(_:dataTask:didReceive:)'") })
    }

    /// The module search paths this build compiled `Ferry` with, read from SwiftPM's build
    /// manifest beside the products folder (`<scratch>/debug.yaml`).
    static func ferryModuleFlags() throws -> [String] {
        let products = URL(fileURLWithPath: try BuiltProducts.folder(of: "ferry"))
        let configuration = products.lastPathComponent  // debug or release
        let scratch = products.deletingLastPathComponent().deletingLastPathComponent()
        let manifest = try String(contentsOf: scratch.appendingPathComponent("\(configuration).yaml"), encoding: .utf8)
        guard let line = manifest.split(separator: "\n").first(where: { $0.contains("args: [") && $0.contains("\"-module-name\",\"Ferry\",") }),
              let start = line.firstIndex(of: "["),
              let arguments = try JSONSerialization.jsonObject(with: Data(line[start...].utf8)) as? [String] else {
            throw SpawnError(message: "no compile command of the Ferry module in \(scratch.path)/\(configuration).yaml")
        }
        // Only what finds modules: -I, -target and the C modules' -Xcc flags.
        var flags: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if ["-I", "-target", "-Xcc"].contains(argument), index + 1 < arguments.count {
                flags += [argument, arguments[index + 1]]
                index += 2
            } else {
                index += 1
            }
        }
        return flags
    }

    /// The same mistakes in the class's own body, where the compiler says nothing.
    static let bodyDelegate = """
        import Foundation
        import Ferry

        final class Uploads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
            struct FerryError: Error {}
            // Ferry's error type where URLSession's has Error?: never called.
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: FerryError?) {}
            // A misspelt label: never called.
            func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didRecieve data: Data) {}
            // Right: no warning.
            func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
                            totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
        }
        """

    /// A package that uses the plugin, as docs/porting.md says, on a target holding
    /// ``bodyDelegate``. It finds `Ferry`'s module where this build made it (`flags`), so that
    /// its build builds the plugin and its check but not Ferry again. A package depended on
    /// by path is named by its folder: this checkout's, not "Ferry".
    static func pluginUser(ferry root: URL, flags: [String]) -> String {
        func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        return """
            // swift-tools-version:6.1
            import PackageDescription
            let package = Package(
                name: "PluginUser",
                dependencies: [.package(path: \(quoted(root.path)))],
                targets: [
                    .target(
                        name: "Uploads",
                        swiftSettings: [.unsafeFlags([\(flags.map(quoted).joined(separator: ", "))])],
                        plugins: [.plugin(name: "DelegateCheck", package: \(quoted(root.lastPathComponent)))]
                    ),
                ]
            )
            """
    }

    @Test("in the class's body, DelegateCheck warns about both near misses at their lines in swift build's output", .timeLimit(.minutes(15)))
    func pluginWarnsInClassBody() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let work = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let sources = work.appendingPathComponent("Sources/Uploads")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Self.pluginUser(ferry: root, flags: try Self.ferryModuleFlags()).write(to: work.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try Self.bodyDelegate.write(to: sources.appendingPathComponent("Uploads.swift"), atomically: true, encoding: .utf8)
        // Ferry's dependencies at the versions this checkout uses, from SwiftPM's cache.
        let resolved = root.appendingPathComponent("Package.resolved")
        if FileManager.default.fileExists(atPath: resolved.path) {
            try FileManager.default.copyItem(at: resolved, to: work.appendingPathComponent("Package.resolved"))
        }
        let log = work.appendingPathComponent("build.log")
        let build = try SpawnedProcess.start("/usr/bin/env", ["swift", "build", "--package-path", work.path], log: log, ownProcessGroup: true)
        defer { build.kill() }
        let status = try await build.exit(within: .seconds(840))
        let output = build.output
        #expect(status == 0, "the package builds: \(output.suffix(3000))")
        let warnings = output.split(separator: "\n").filter { $0.contains("Uploads.swift:") && $0.contains(": warning: ") }
        #expect(warnings.count == 2, "only the plugin's two warnings, none for the right method: \(warnings)\n\(output.suffix(3000))")
        let ferrys = output.split(separator: "\n").filter { $0.hasPrefix(root.path + "/") && $0.contains(": warning: ") }
        #expect(ferrys.isEmpty, "the plugin and its check compile without warnings in a user's build: \(ferrys)")
        #expect(warnings.contains { $0.contains("/Sources/Uploads/Uploads.swift:7:10: warning: instance method 'urlSession(_:task:didCompleteWithError:)' nearly matches requirement 'urlSession(_:task:didCompleteWithError:)' of 'URLSessionTaskDelegate' (error: Error? expected, FerryError? found): it will never be called") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("/Sources/Uploads/Uploads.swift:9:10: warning: instance method 'urlSession(_:dataTask:didRecieve:)' nearly matches requirement 'urlSession(_:dataTask:didReceive:)' of 'URLSessionDataDelegate' (label 'didReceive' expected, label 'didRecieve' found): it will never be called") }, "\(warnings)")
    }
}
