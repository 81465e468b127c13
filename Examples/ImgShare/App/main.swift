import ExampleSupport
import Ferry
import Foundation
import ImgShareKit

// imgshare: the containing app.
//   imgshare setup [--server URL] [--client-id ID]   where images go and the app's Client-ID
//   imgshare share IMAGE [--title T] [--post]        share an image via `ferry share`
//   imgshare history                                 the uploaded images' links
// Started by ferryd (FERRY_BACKGROUND_SESSION set) it reconnects to the session and records
// each finished upload through ImgurService, the code the extension uses too.
await ExampleApp.handleBackgroundLaunch(ImgShare.group, program: "imgshare") { finished in
    ImgurService(fallback: { result, task in ImgurService.record(result, task: task, handledBy: "app") }, whenEventsFinished: finished)
}

func option(_ name: String, in arguments: [String]) -> String? { ExampleApp.option(name, in: arguments) }
func fail(_ message: String, status: Int32 = 1) -> Never { ExampleApp.fail("imgshare", message, status: status) }

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "setup":
    let environment = ProcessInfo.processInfo.environment
    let server = option("--server", in: arguments) ?? environment["BYTECLUB_SERVER"] ?? "http://127.0.0.1:8080"
    guard let url = URL(string: server), url.scheme != nil else { fail("not a URL: \(server)", status: 2) }
    guard let clientID = option("--client-id", in: arguments) ?? environment["BYTECLUB_CLIENT_ID"] else {
        fail("give the app's Client-ID with --client-id (byteclub-server prints it on first start)", status: 2)
    }
    do {
        try ImgShare.settings().save(Settings(server: url, clientID: clientID))
        print("images go to \(url.absoluteString)/3/image")
    } catch {
        fail("\(error)")
    }
case "share":
    guard let image = arguments.dropFirst().first(where: { !$0.hasPrefix("--") && $0 != option("--title", in: arguments) }) else {
        fail("usage: imgshare share IMAGE [--title T] [--post]", status: 2)
    }
    var shareArguments = ["share", image]
    if let title = option("--title", in: arguments) { shareArguments += ["--text", title] }
    if arguments.contains("--post") { shareArguments += ["--to", ImgShare.extensionBundleIdentifier, "--post"] }
    do { exit(try runProgram(siblingProgram("ferry"), shareArguments)) } catch { fail("cannot run ferry: \(error)") }
case "history":
    do {
        let uploads = try ImgShare.history().read()
        if uploads.isEmpty { print("nothing uploaded yet") }
        let dates = ISO8601DateFormatter()
        for upload in uploads {
            let outcome = upload.link ?? "failed: \(upload.error ?? "?")"
            print("\(dates.string(from: upload.date))  #\(upload.task)  \(upload.title.map { "\"\($0)\" " } ?? "")\(outcome)")
        }
    } catch {
        fail("\(error)")
    }
default:
    print("""
        usage: imgshare setup [--server URL] [--client-id ID]
               imgshare share IMAGE [--title T] [--post]
               imgshare history
        (ferryd starts imgshare by itself when uploads finish)
        """)
}
