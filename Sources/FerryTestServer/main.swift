// ferry-testserver [--port P] [--resumable [--resumable-port P]]
// Runs FerryTestSupport's servers in the foreground on 127.0.0.1 and prints the base URL
// of the scriptable server on the first line (and the resumable-upload server's on the
// second, with --resumable). Stops on SIGINT/SIGTERM or when stdin closes with --stdin-eof.
import FerryTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func usage() -> Never {
    print("usage: ferry-testserver [--port P] [--resumable] [--resumable-port P]")
    exit(2)
}

var port = 0
var resumable = false
var resumablePort = 0
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
    case "-h", "--help":
        usage()
    default:
        print("ferry-testserver: unknown argument \(arg)")
        usage()
    }
}

do {
    let server = try await TestHTTPServer.start(port: port)
    print(server.baseURL)
    fflush(nil)
    if resumable {
        let upload = try await ResumableUploadServer.start(port: resumablePort)
        print(upload.baseURL)
        fflush(nil)
    }
    // Run until a signal ends the process; a bounded sleep loop keeps the server alive.
    while true { try await Task.sleep(for: .seconds(3600)) }
} catch {
    print("ferry-testserver: \(error)")
    exit(1)
}
