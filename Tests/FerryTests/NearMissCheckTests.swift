@testable import FerryDelegateCheck
import Foundation
import Testing

/// The DelegateCheck plugin's check (`ferry-delegate-check`): it reads the requirements from
/// Ferry's own protocol declarations and methods as written, and tells a near miss from a
/// match and from an unrelated method. The plugin in a real build: NearMissDelegateTests.
@Suite("Near-miss check")
struct NearMissCheckTests {
    /// Ferry's `Sources/Ferry/URLSession/URLSessionDelegate.swift`, found from this file.
    static let protocolsFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(DelegateRequirements.protocolsPath)

    static func requirements() throws -> [DelegateRequirements.Requirement] {
        DelegateRequirements.protocolRequirements(in: try String(contentsOf: protocolsFile, encoding: .utf8))
    }

    @Test("Ferry's URLSessionDelegate.swift reads as the four protocols' requirements, defaults left out")
    func requirementsAreFerrysProtocols() throws {
        let requirements = try Self.requirements()
        // Each requirement is a `    func` line in a protocol; the defaults are `public func`.
        let lines = try String(contentsOf: Self.protocolsFile, encoding: .utf8).split(separator: "\n")
        #expect(requirements.count == lines.filter { $0.hasPrefix("    func ") }.count)
        #expect(Set(requirements.map(\.protocolName)) == ["URLSessionDelegate", "URLSessionTaskDelegate", "URLSessionDataDelegate", "URLSessionDownloadDelegate"])
        let redirect = try #require(requirements.first { $0.declaration.fullName == "urlSession(_:task:willPerformHTTPRedirection:newRequest:completionHandler:)" })
        #expect(redirect.protocolName == "URLSessionTaskDelegate")
        #expect(redirect.declaration.parameters.map(\.type) == [
            "URLSession", "URLSessionTask", "HTTPURLResponse", "URLRequest", "@escaping @Sendable (URLRequest?) -> Void",
        ])
        #expect(requirements.allSatisfy { $0.declaration.effects.isEmpty && $0.declaration.result == nil })
        #expect(requirements.contains { $0.declaration.fullName == "urlSessionDidFinishEvents(forBackgroundURLSession:)" })
    }

    static let delegate = #"""
        final class Uploads: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
            let note = "func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: NSError?) {}"
            let other = "\(note) \"func urlSession(_ session: URLSession, didBecomeInvalidWithError error: Int) {}"
            /* func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: NSError?) {}
               /* nested */ func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Int) {} */
            // func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Int) {}
            public func urlSession(_ session: Foundation.URLSession, // the session
                                   task: URLSessionTask,
                                   willPerformHTTPRedirection response: HTTPURLResponse,
                                   newRequest request: URLRequest,
                                   completionHandler: @escaping (_ request: URLRequest?) -> ()) {}
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Optional<any Swift.Error> = nil) {}
            func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
                completionHandler(.allow)
            }
            func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {}
            func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {}
            func urlSessionDidStart(_ session: URLSession) {}
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error!) {}
            func urlSession(session: URLSession,
                            didBecomeInvalidWithError error: (any Error)?) {}
            @MainActor func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int,
                                       totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {}
            func urlSession(_ session: URLSession, task: URLSessionTask, didReceive data: Data) {}
            func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) async {}
            func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                            completionHandler: @escaping @MainActor (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {}
        }
        """#

    @Test("near misses are found with their line, column and difference; matches, comments, strings and other methods are not")
    func nearMissesInOneFile() throws {
        let misses = DelegateCheckCommand.nearMisses(in: Self.delegate, requirements: try Self.requirements())
        let found = misses.map { "\($0.method.line):\($0.method.column) \($0.requirement.fullName) \($0.differences.joined(separator: "; "))" }
        #expect(found == [
            "20:10 urlSession(_:task:didCompleteWithError:) error: Error? expected, Error! found",
            "21:10 urlSession(_:didBecomeInvalidWithError:) no label expected, label 'session' found",
            "23:21 urlSession(_:downloadTask:didWriteData:totalBytesWritten:totalBytesExpectedToWrite:) bytesWritten: Int64 expected, Int found",
            "25:10 urlSession(_:dataTask:didReceive:) label 'dataTask' expected, label 'task' found; dataTask: URLSessionDataTask expected, URLSessionTask found",
            "26:10 urlSession(_:task:didFinishCollecting:) synchronous expected, 'async' found",
            "27:10 urlSession(_:task:didReceive:completionHandler:) completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void expected, @escaping @MainActor (URLSession.AuthChallengeDisposition, URLCredential?) -> Void found",
        ], "\(found)")
        #expect(misses.first?.message == "instance method 'urlSession(_:task:didCompleteWithError:)' nearly matches requirement "
            + "'urlSession(_:task:didCompleteWithError:)' of 'URLSessionTaskDelegate' (error: Error? expected, Error! found): it will never be called")
    }

    @Test("the examples in URLSession's spelling have delegate methods and no near miss (their targets cannot run the plugin in this package)")
    func examplesHaveNoNearMisses() throws {
        let examples = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples")
        let folders = ["ShareAlike", "ImgShare", "ByteClub", "Support"].map { examples.appendingPathComponent($0).path }
        let requirements = try Self.requirements()
        var methods = 0
        for file in DelegateCheckCommand.swiftFiles(in: folders) {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            methods += text.components(separatedBy: "func urlSession").count - 1
            #expect(DelegateCheckCommand.nearMisses(in: text, requirements: requirements).isEmpty, "\(file)")
        }
        #expect(methods >= 10, "the examples' delegate methods were found (\(methods))")
    }

    @Test("labels: a misspelling, a case or a shortened label is near; another word is not")
    func labelDistances() {
        func distance(_ expected: String, _ found: String, name: String = "x") -> Int? {
            NearMiss.labelDistance(expected: .init(label: expected, name: name, type: "T"), found: .init(label: found, name: name, type: "T"))
        }
        #expect(NearMiss.editDistance("didReceive", "didRecieve") == 1)
        #expect(distance("didReceive", "didRecieve") == 1)
        #expect(distance("didCompleteWithError", "didCompleteWithErr") == 2)
        #expect(distance("didWriteData", "didwritedata") == 1)
        #expect(distance("dataTask", "task") == 2)
        #expect(distance("_", "session", name: "session") == 1)
        #expect(distance("didReceive", "willCacheResponse") == nil)
        #expect(distance("taskIsWaitingForConnectivity", "didCreateTask") == nil)
        #expect(distance("_", "task") == nil)
    }

    @Test("types compare as the compiler matches them")
    func typeSpellings() {
        let same: [(String, String)] = [
            ("Error?", "(any Swift.Error)?"), ("Error?", "Optional<Error>"), ("URLSession", "Foundation.URLSession"),
            ("@escaping @Sendable (URLRequest?) -> Void", "@escaping (_ request: URLRequest?) -> ()"),
            ("@escaping @Sendable (URLRequest?) -> Void", "(Optional<URLRequest>) -> Swift.Void"),
            ("URLSession.ResponseDisposition", "Ferry.URLSession.ResponseDisposition"),
        ]
        for (a, b) in same { #expect(TypeSpelling.normalized(a) == TypeSpelling.normalized(b), "\(a) and \(b)") }
        let different: [(String, String)] = [
            ("Error?", "Error!"), ("Int64", "Int"), ("Error?", "FerryError?"), ("((Int) -> Void)?", "(Int) -> Void?"),
            ("@escaping @Sendable (Int) -> Void", "@escaping @MainActor (Int) -> Void"), ("URLSessionTask", "URLSessionDataTask"),
        ]
        for (a, b) in different { #expect(TypeSpelling.normalized(a) != TypeSpelling.normalized(b), "\(a) and \(b)") }
    }
}
