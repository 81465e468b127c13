@testable import FerryDaemon
@testable import FerryNetwork
import FerryTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ferryd's D-Bus client against the real dbus-daemon (``SystemBus``), and against sd-bus
/// (busctl) as the other end: what it marshals is accepted and read back by both, what they
/// send is read, errors and bounds say what went wrong.
@Suite("D-Bus client", .serialized)
struct DBusTests {
    /// Every type ferryd reads, nested: s, o, u, ao (empty too), a{sv} with a variant in a variant, and the rest.
    static let everything: [DBusValue] = [
        .string("grüße"), .objectPath("/org/freedesktop/NetworkManager/Devices/2"), .uint32(3), .boolean(true), .byte(7),
        .int16(-2), .uint16(65_000), .int32(-70_000), .int64(-5_000_000_000), .uint64(1 << 60), .double(0.25), .signature("a{sv}"),
        .objectPaths(["/a", "/a/b"]), .objectPaths([]),
        .properties(["Metered": .uint32(1), "Interface": .string("eth0"), "Nested": .variant(.int64(9)), "Paths": .objectPaths(["/x"])]),
        .variant(.structure([.byte(1), .string("x")])),
        .array(.array(.byte), [.array(.byte, [1, 2, 3].map(DBusValue.byte)), .array(.byte, [])]),
    ]

    /// The next message `connection` receives, waiting (≤ `limit`) without holding a thread of
    /// Swift's pool: other suites run meanwhile, and busctl's answer needs one.
    static func next(_ connection: DBusConnection, _ what: String, within limit: Duration = .seconds(5)) async throws -> DBusMessage {
        try await eventually(what, timeout: limit, every: .milliseconds(5)) { try connection.receive(timeout: 0) }
    }

    static func withBus(_ body: (SystemBus) async throws -> Void) async throws {
        let bus = try await SystemBus.start()
        defer { bus.stop() }
        try await body(bus)
    }

    @Test("connects (EXTERNAL as this uid, Hello) and reads the bus's answers: u, as, a{sv}")
    func helloAndBusCalls() async throws {
        try await Self.withBus { bus in
            let connection = try DBusConnection(address: bus.address, timeout: 2)
            defer { connection.close() }
            #expect(connection.uniqueName.hasPrefix(":"), "\(connection.uniqueName)")
            let user = try connection.call(.busCall("GetConnectionUnixUser", [.string(connection.uniqueName)]), timeout: 2)
            #expect(user.body == [.uint32(getuid())])
            let names = try connection.call(.busCall("ListNames"), timeout: 2).body.first?.elements?.compactMap(\.string) ?? []
            #expect(names.contains("org.freedesktop.DBus") && names.contains(connection.uniqueName), "\(names)")
            let credentials = try connection.call(.busCall("GetConnectionCredentials", [.string(connection.uniqueName)]), timeout: 2)
            let fields = try #require(credentials.body.first?.dictionary, "\(credentials.body)")
            #expect(fields["UnixUserID"] == .uint32(getuid()) && fields["ProcessID"] == .uint32(UInt32(getpid())), "\(fields)")
        }
    }

    @Test("an error reply is thrown with its name and message")
    func errorReply() async throws {
        try await Self.withBus { bus in
            let connection = try DBusConnection(address: bus.address, timeout: 2)
            defer { connection.close() }
            #expect {
                try connection.call(.busCall("GetNameOwner", [.string("org.freedesktop.NetworkManager")]), timeout: 2)
            } throws: { error in
                guard case .remote(let name, let message) = error as? DBusError else { return false }
                return name == "org.freedesktop.DBus.Error.NameHasNoOwner" && message.contains("org.freedesktop.NetworkManager")
            }
        }
    }

    @Test("a call between two connections carries every type both ways through dbus-daemon, which checks each message")
    func roundTrip() async throws {
        try await Self.withBus { bus in
            let server = try DBusConnection(address: bus.address, timeout: 2)
            let client = try DBusConnection(address: bus.address, timeout: 2)
            defer { server.close(); client.close() }
            let owned = try server.call(.busCall("RequestName", [.string("org.ferry.Test"), .uint32(0)]), timeout: 2)
            #expect(owned.body == [.uint32(1)], "primary owner")
            let serial = try client.send(.call("org.ferry.Test", path: "/org/ferry/Test", interface: "org.ferry.Test", member: "Echo", Self.everything))
            let call = try await Self.next(server, "the call to reach the server")
            #expect(call.kind == .methodCall && call.member == "Echo" && call.sender == client.uniqueName)
            #expect(call.body == Self.everything)
            try server.send(DBusMessage(kind: .methodReturn, replySerial: call.serial, destination: call.sender, body: call.body))
            let reply = try await Self.next(client, "the reply to come back")
            #expect(reply.kind == .methodReturn && reply.replySerial == serial)
            #expect(reply.body == Self.everything)
        }
    }

    @Test("sd-bus (busctl) calls ferryd's connection and reads its reply: s, u, a{sv}, ao as busctl writes and reads them")
    func againstBusctl() async throws {
        try await Self.withBus { bus in
            let server = try DBusConnection(address: bus.address, timeout: 2)
            defer { server.close() }
            _ = try server.call(.busCall("RequestName", [.string("org.ferry.Test"), .uint32(0)]), timeout: 2)
            // Started, not waited for: it answers once this test has replied.
            let busctl = try SpawnedProcess.start("/usr/bin/busctl", [
                "--address=\(bus.address)", "--json=short", "call", "org.ferry.Test", "/org/ferry/Test", "org.ferry.Test", "Echo",
                "sa{sv}ao", "hello", "2", "Metered", "u", "1", "Interface", "s", "eth0", "2", "/a", "/b",
            ], log: bus.root.appendingPathComponent("busctl.out"))
            defer { busctl.kill() }
            let call = try await Self.next(server, "busctl's call", within: .seconds(10))
            #expect(call.body.count == 3 && call.body[0] == .string("hello") && call.body[2] == .objectPaths(["/a", "/b"]), "\(call.body)")
            #expect(call.body[1].dictionary == ["Metered": .uint32(1), "Interface": .string("eth0")], "\(call.body)")
            try server.send(DBusMessage(
                kind: .methodReturn, replySerial: call.serial, destination: call.sender,
                body: [.string("ok"), .uint32(7), .properties(["Metered": .uint32(2)]), .objectPaths(["/org/x"])]))
            #expect(try await busctl.exit(within: .seconds(10)) == 0, "\(busctl.output)")
            let printed = busctl.output
            let json = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any], "\(printed)")
            #expect(json["type"] as? String == "sua{sv}ao", "\(printed)")
            let data = try #require(json["data"] as? [Any], "\(printed)")
            #expect(data.count == 4 && data[0] as? String == "ok" && data[1] as? Int == 7, "\(printed)")
            let metered = (data[2] as? [String: Any])?["Metered"] as? [String: Any]
            #expect(metered?["type"] as? String == "u" && metered?["data"] as? Int == 2, "\(printed)")
            #expect(data[3] as? [String] == ["/org/x"], "\(printed)")
        }
    }

    @Test("a match rule brings NameOwnerChanged signals when a name is taken and let go")
    func signals() async throws {
        try await Self.withBus { bus in
            let watcher = try DBusConnection(address: bus.address, timeout: 2)
            defer { watcher.close() }
            let rule = "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.ferry.Other'"
            _ = try watcher.call(.busCall("AddMatch", [.string(rule)]), timeout: 2)
            let other = try DBusConnection(address: bus.address, timeout: 2)
            _ = try other.call(.busCall("RequestName", [.string("org.ferry.Other"), .uint32(0)]), timeout: 2)
            let taken = try await Self.next(watcher, "NameOwnerChanged when the name is taken")
            #expect(taken.kind == .signal && taken.member == "NameOwnerChanged")
            #expect(taken.body == [.string("org.ferry.Other"), .string(""), .string(other.uniqueName)])
            other.close()
            let left = try await Self.next(watcher, "NameOwnerChanged when its owner left")
            #expect(left.body == [.string("org.ferry.Other"), .string(other.uniqueName), .string("")])
            #expect(try watcher.receive(timeout: 0.2) == nil, "no other signal matches")
        }
    }

    @Test("a message over the connection's limit is refused from its header, with both lengths")
    func messageTooLarge() async throws {
        try await Self.withBus { bus in
            let server = try DBusConnection(address: bus.address, timeout: 2, maximumMessageSize: 64 << 10)
            let client = try DBusConnection(address: bus.address, timeout: 2)
            defer { server.close(); client.close() }
            _ = try server.call(.busCall("RequestName", [.string("org.ferry.Test"), .uint32(0)]), timeout: 2)
            try client.send(.call("org.ferry.Test", path: "/", interface: "org.ferry.Test", member: "Big", [.string(String(repeating: "x", count: 100_000))]))
            #expect {
                _ = try server.receive(timeout: 2)
            } throws: { error in
                guard case .messageTooLarge(let length, let limit) = error as? DBusError else { return false }
                return length > 100_000 && limit == 64 << 10
            }
        }
    }

    @Test("no bus: connecting fails at once and says why; an address that is not unix: is refused")
    func noBus() throws {
        let start = ContinuousClock.now
        #expect(throws: DBusError.system(call: "connect", errno: ENOENT)) {
            _ = try DBusConnection(address: "unix:path=/nonexistent/ferry-bus", timeout: 2)
        }
        #expect(ContinuousClock.now - start < .milliseconds(500))
        #expect(throws: DBusError.address("no unix:path= or unix:abstract= address in 'tcp:host=localhost,port=1'")) {
            _ = try DBusConnection(address: "tcp:host=localhost,port=1", timeout: 2)
        }
        let escaped = try DBusConnection.socketAddress("unix:path=/tmp/a%20b")
        let path = withUnsafeBytes(of: escaped.address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(path == "/tmp/a b")
    }

    @Test("a bus listening on an abstract socket name (unix:abstract=) is connected to and answers Hello")
    func abstractAddress() async throws {
        let bus = try await SystemBus.start(abstract: SystemBus.uniqueName())
        defer { bus.stop() }
        #expect(bus.address.hasPrefix("unix:abstract="), "\(bus.address)")
        let connection = try DBusConnection(address: bus.address, timeout: 2)
        defer { connection.close() }
        #expect(connection.uniqueName.hasPrefix(":"), "\(connection.uniqueName)")
        let names = try connection.call(.busCall("ListNames"), timeout: 2).body.first?.elements?.compactMap(\.string) ?? []
        #expect(names.contains(connection.uniqueName), "\(names)")
    }

    @Test("a call whose answer never comes times out at its deadline, though signals keep arriving meanwhile")
    func deadlineUnderTraffic() async throws {
        try await Self.withBus { bus in
            let silent = try DBusConnection(address: bus.address, timeout: 2)
            let client = try DBusConnection(address: bus.address, timeout: 2)
            defer { silent.close(); client.close() }
            _ = try silent.call(.busCall("RequestName", [.string("org.ferry.Silent"), .uint32(0)]), timeout: 2)
            // Signals sent to the client as fast as the bus takes them, from two connections (so
            // that the client seldom finds its socket empty), for at most 10 s.
            let (address, target) = (bus.address, client.uniqueName)
            let flooding = (0..<2).map { _ in Thread {
                guard let sender = try? DBusConnection(address: address, timeout: 2) else { return }
                defer { sender.close() }
                let end = DBusConnection.now + 10
                let signal = DBusMessage(
                    kind: .signal, path: "/org/ferry/Flood", interface: "org.ferry.Flood", member: "Tick", destination: target,
                    body: [.string(String(repeating: "x", count: 512))])
                while DBusConnection.now < end, !Thread.current.isCancelled {
                    guard (try? sender.send(signal)) != nil else { return }
                }
            } }
            flooding.forEach { $0.start() }
            defer { flooding.forEach { $0.cancel() } }
            #expect(try await Self.next(client, "the first signal of the flood").member == "Tick")
            let start = DBusConnection.now
            #expect(throws: DBusError.timedOut("org.ferry.Silent.Wait on org.ferry.Silent")) {
                _ = try client.call(.call("org.ferry.Silent", path: "/", interface: "org.ferry.Silent", member: "Wait"), timeout: 0.3)
            }
            let took = DBusConnection.now - start
            #expect(took < 1.0, "the call gave up \(took) s after it was sent, its time-out 0.3 s")
        }
    }

    @Test("a big-endian message (a sender on another machine's byte order) is read: header fields and body")
    func bigEndian() throws {
        // A signal, by hand: 'B', type 4, flags 0, version 1, body length 4, serial 1, fields
        // (array of 55 bytes: PATH "/", INTERFACE "a.b", MEMBER "C", SIGNATURE "u"), padding, body u 0x01020304.
        var bytes: [UInt8] = [0x42, 4, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 55]
        bytes += [1, 1, 0x6f, 0, 0, 0, 0, 1, 0x2f, 0, 0, 0, 0, 0, 0, 0]  // PATH, o, "/" + padding to 8
        bytes += [2, 1, 0x73, 0, 0, 0, 0, 3] + Array("a.b".utf8) + [0, 0, 0, 0, 0]  // INTERFACE, s, "a.b"
        bytes += [3, 1, 0x73, 0, 0, 0, 0, 1, 0x43, 0, 0, 0, 0, 0, 0, 0]  // MEMBER, s, "C"
        bytes += [8, 1, 0x67, 0, 1, 0x75, 0, 0]  // SIGNATURE, g, "u", then padding to the body
        bytes += [1, 2, 3, 4]
        let message = try DBusMessage.decode(bytes)
        #expect(message.kind == .signal && message.serial == 1)
        #expect(message.path == "/" && message.interface == "a.b" && message.member == "C")
        #expect(message.body == [.uint32(0x0102_0304)])
    }

    @Test("bad bytes are protocol errors, never a crash: a truncated message, a bad boolean, an array past the end")
    func malformed() throws {
        let good = try DBusMessage.call("org.x", path: "/", interface: "org.x", member: "M", [.boolean(true), .objectPaths(["/a"])]).encoded(serial: 5)
        #expect(try DBusMessage.decode(good).body == [.boolean(true), .objectPaths(["/a"])])
        #expect(throws: DBusError.self) { try DBusMessage.decode(Array(good.dropLast(3))) }
        var badBoolean = good
        badBoolean[good.count - 15] = 2  // the body: boolean (4), the array's length (4), "/a" (4 + 3)
        #expect(throws: DBusError.protocolViolation("a boolean of 2")) { try DBusMessage.decode(badBoolean) }
        var longArray = good
        longArray[good.count - 11] = 200  // the array claims 200 bytes
        #expect(throws: DBusError.self) { try DBusMessage.decode(longArray) }
        #expect(throws: DBusError.self) { try DBusType.parse("a{vs}") }
        #expect(throws: DBusError.self) { try DBusType.parse(String(repeating: "a", count: 33) + "y") }
        #expect(try DBusType.parse("sa{sv}aoyv(ua(ss))") .map(\.signature) == ["s", "a{sv}", "ao", "y", "v", "(ua(ss))"])
    }
}
