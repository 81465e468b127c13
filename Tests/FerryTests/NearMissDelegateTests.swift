import FerryTestSupport
import Foundation
import Testing

/// A delegate method that nearly matches a URLSession requirement (a wrong type or label) is
/// never called. The Swift compiler warns about it when the conformance is declared in an
/// extension holding the methods — the way docs/porting.md asks delegates to be written. This
/// compiles such a delegate against the Ferry module this build made and reads the warnings.
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
}
