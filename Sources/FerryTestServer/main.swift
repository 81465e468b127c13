// ferry-testserver [--port P] [--resumable] [--resumable-port P] [--nginx] [--tls] [--lifetime SECONDS]
//
// Runs FerryTestSupport's servers in the foreground on 127.0.0.1 for benchmark and demo
// scripts. Output, one line each, flushed at once:
//   http://127.0.0.1:PORT                          TestHTTPServer (always the first line)
//   resumable http://127.0.0.1:PORT                with --resumable (ResumableUploadServer)
//   nginx http://127.0.0.1:PORT ROOT [https://…]   with --nginx (NginxServer; --tls adds HTTPS)
//   ready
// Stops cleanly (nginx stopped, temp dirs removed) on SIGINT/SIGTERM or after --lifetime
// seconds (default 86400).
import Dispatch
import FerrySystem
import FerryTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func usage() -> Never {
    print("usage: ferry-testserver [--port P] [--resumable] [--resumable-port P] [--nginx] [--tls] [--lifetime SECONDS]")
    exit(2)
}

func say(_ line: String) {
    print(line)
    fflush(nil)
}

var port = 0
var resumable = false
var resumablePort = 0
var nginx = false
var tls = false
var lifetime = 86_400
var args = CommandLine.arguments.dropFirst()[...]
while let arg = args.popFirst() {
    switch arg {
    case "--port":
        guard let v = args.popFirst().flatMap({ Int($0) }) else { usage() }
        port = v
    case "--resumable":
        resumable = true
    case "--resumable-port":
        guard let v = args.popFirst().flatMap({ Int($0) }) else { usage() }
        resumablePort = v
    case "--nginx":
        nginx = true
    case "--tls":
        tls = true
    case "--lifetime":
        guard let v = args.popFirst().flatMap({ Int($0) }), v > 0 else { usage() }
        lifetime = v
    case "-h", "--help":
        usage()
    default:
        say("ferry-testserver: unknown argument \(arg)")
        usage()
    }
}

// SIGINT/SIGTERM end the wait below instead of the process, so cleanup runs.
let (signals, signalled) = AsyncStream<Void>.makeStream()
let signalHandling = Signals.handle([SIGINT, SIGTERM]) { _ in signalled.yield() }

do {
    let server = try await TestHTTPServer.start(port: port)
    say(server.baseURL)
    var upload: ResumableUploadServer?
    if resumable {
        upload = try await ResumableUploadServer.start(port: resumablePort)
        say("resumable " + upload!.baseURL)
    }
    var web: NginxServer?
    if nginx {
        let started = try await NginxServer.start(tls: tls)
        web = started
        say("nginx \(started.baseURL) \(started.root.path)" + (started.httpsBaseURL.map { " " + $0 } ?? ""))
    }
    say("ready")
    await withTaskGroup(of: Void.self) { group in
        group.addTask { try? await Task.sleep(for: .seconds(lifetime)) }
        group.addTask {
            for await _ in signals { return }
        }
        await group.next()
        group.cancelAll()
    }
    try? await web?.stop()
    try? await upload?.shutdown()
    try await server.shutdown()
} catch {
    say("ferry-testserver: \(error)")
    exit(1)
}
