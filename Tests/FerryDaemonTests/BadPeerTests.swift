import FerryProtocol
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Peers that do not play by the rules get a reason and a closed connection; ferryd and
/// everyone else go on (real process).
@Suite("Bad peers (real process)", .serialized)
struct BadPeerTests {
    static func frame(length: UInt32, _ payload: [UInt8] = []) -> [UInt8] {
        withUnsafeBytes(of: length.bigEndian) { Array($0) } + payload
    }

    /// ferryd still answers a well-behaved client.
    static func stillServing(_ ferryd: FerrydProcess) async throws {
        let client = try await RawClient.connected(to: ferryd.socketPath, name: "good")
        guard case .status(let status) = try await client.request(.status) else { throw TestFailure("no status") }
        #expect(status.daemonVersion.isEmpty == false)
    }

    @Test("bad frames and handshakes are refused with the reason, and the connection closes")
    func badFrames() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let hello = Array(try MessageCoder().encode(ClientMessage.hello(Hello(clientName: "x", pid: 1))).readableBytesView)
        let futureHello = Array(#"{"type":"hello","protocolVersion":99,"clientName":"x","pid":1}"#.utf8)
        let cases: [(String, [UInt8], FerryProtocolError.Code)] = [
            ("huge length prefix", Self.frame(length: 0xFFFF_FFFF), .frameTooLarge),
            ("length above 1 MiB", Self.frame(length: (1 << 20) + 1), .frameTooLarge),
            ("empty frame", Self.frame(length: 0), .emptyFrame),
            ("not JSON", Self.frame(length: 5, Array("hello".utf8)), .malformedMessage),
            ("unknown message type", Self.frame(length: 16, Array(#"{"type":"hack"} "#.utf8)), .unknownMessageType),
            ("a newer protocol", Self.frame(length: UInt32(futureHello.count), futureHello), .unsupportedVersion),
            ("a request before hello", Self.frame(length: UInt32(
                try MessageCoder().encode(ClientMessage.request(id: 1, .status)).readableBytes),
                Array(try MessageCoder().encode(ClientMessage.request(id: 1, .status)).readableBytesView)), .handshakeRequired),
            ("hello twice", Self.frame(length: UInt32(hello.count), hello) + Self.frame(length: UInt32(hello.count), hello), .handshakeRequired),
        ]
        for (name, bytes, code) in cases {
            let client = try RawClient(socketPath: ferryd.socketPath)
            try await client.sendBytes(bytes)
            let (closed, messages) = try await client.waitForClose()
            #expect(closed, "\(name): still open")
            let reasons = messages.compactMap { message -> FerryProtocolError.Code? in
                switch message {
                case .refused(let error), .goodbye(let error): error.code
                default: nil
                }
            }
            #expect(reasons == [code], "\(name): \(messages)")
        }
        try await Self.stillServing(ferryd)
        #expect(ferryd.log.contains("frameTooLarge"))
    }

    @Test("random bytes, 50 times, leave ferryd serving")
    func randomBytes() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<50 {
            let client = try RawClient(socketPath: ferryd.socketPath)
            let count = Int.random(in: 1...4096, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, bytes.count >= 4 {
                bytes.replaceSubrange(0..<4, with: Self.frame(length: UInt32(bytes.count - 4)))  // well framed, garbage inside
            }
            try await client.sendBytes(bytes)
            client.close()
        }
        try await Self.stillServing(ferryd)
        #expect(ferryd.process?.isRunning == true)
    }

    @Test("a client that never reads is cut off once its unread replies pass the bound; others are served meanwhile")
    func neverReads() async throws {
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        // 400 tasks with long URLs: each page of them is ~1 MiB of JSON.
        let setup = try await RawClient.connected(to: ferryd.socketPath, name: "setup")
        try await setup.request(.attach("big"))
        let long = String(repeating: "a", count: 1800)
        for i in 0..<400 {
            var submission = TaskSubmission.download("big", "http://127.0.0.1:9/\(long)/\(i)")
            submission.earliestBeginDate = Date().addingTimeInterval(86_400)
            _ = try await setup.submit(submission)
        }
        let greedy = try await RawClient.connected(to: ferryd.socketPath, name: "greedy")
        let list = try MessageCoder().encode(ClientMessage.request(id: 9, .listTasks(ListTasks(sessionIdentifier: "big"))))
        let frame = Array(try FrameEncoder.frame(list).readableBytesView)
        for _ in 0..<40 { try await greedy.sendBytes(frame) }  // ~40 MiB of replies, never read
        try await poll(until: "ferryd to log that the client is not reading", timeout: .seconds(30), every: .milliseconds(100),
                       observed: "its log: \(ferryd.log.suffix(2000))") {
            ferryd.log.contains("the client is not reading")
        }
        try await Self.stillServing(ferryd)
        let (closed, _) = try await greedy.waitForClose(timeout: 30)
        #expect(closed)
    }

    @Test("another user cannot reach the socket (0700 folder, 0600 socket), and is refused by SO_PEERCRED when let through")
    func otherUser() async throws {
        #expect(getuid() == 0, "this test switches to the user nobody, which needs root (as in CI)")
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the probe runs Debian's python3")
        let ferryd = try await FerrydProcess.started()
        defer { ferryd.cleanUp() }
        let attributes = try FileManager.default.attributesOfItem(atPath: ferryd.runtimeDirectory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let socket = try FileManager.default.attributesOfItem(atPath: ferryd.socketPath)
        #expect((socket[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let probe = """
            import socket, struct, json, sys
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(sys.argv[1])
            except OSError as e:
                print("connect-error", e.errno); sys.exit(0)
            b = json.dumps({"type":"hello","protocolVersion":1,"clientName":"intruder","pid":1}).encode()
            try:
                s.sendall(struct.pack(">I", len(b)) + b)
                s.settimeout(5)
                print("read", len(s.recv(65536)))
            except OSError as e:
                print("io-error", e.errno)
            """
        func runAsNobody() throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", probe, ferryd.socketPath]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            process.waitUntilExit()
            return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try runAsNobody() == "connect-error \(EACCES)")
        // Let nobody through the file system: ferryd itself still refuses the connection.
        chmod(ferryd.root.path, 0o755)
        chmod(ferryd.runtimeDirectory.path, 0o711)
        chmod(ferryd.socketPath, 0o666)
        let answer = try runAsNobody()
        // Closed without a welcome: EOF, or a reset/broken pipe if the close came first.
        #expect(["read 0", "io-error \(ECONNRESET)", "io-error \(EPIPE)"].contains(answer), "\(answer)")
        #expect(ferryd.log.contains("refused a connection from another user"))
        try await Self.stillServing(ferryd)
    }
}
