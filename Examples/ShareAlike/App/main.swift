import ExampleSupport
import Ferry
import Foundation
import ShareAlikeKit

// sharealike: the containing app.
//   sharealike setup [--server URL | --bin URL]   make (or name) the request bin posts go to
//   sharealike share [IMAGE] [--text T] [--post]  share "Highland Cow" and an image via `ferry share`
//   sharealike history                            each post and how it went
// Started by ferryd (FERRY_BACKGROUND_SESSION set) it reconnects to the session, records each
// finished post with the same code the extension uses, and exits when the events are delivered.
await ExampleApp.handleBackgroundLaunch(ShareAlike.group, program: "sharealike") { finished in
    PostsDelegate(role: "app", whenEventsFinished: finished)
}

func option(_ name: String, in arguments: [String]) -> String? { ExampleApp.option(name, in: arguments) }
func fail(_ message: String, status: Int32 = 1) -> Never { ExampleApp.fail("sharealike", message, status: status) }

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "setup":
    do {
        let bin: URL
        if let given = option("--bin", in: arguments) {
            guard let url = URL(string: given), url.scheme != nil else { fail("not a URL: \(given)", status: 2) }
            bin = url
        } else {
            // A new bin on byteclub-server (the default server: a local one on 8080).
            let server = option("--server", in: arguments) ?? ProcessInfo.processInfo.environment["BYTECLUB_SERVER"] ?? "http://127.0.0.1:8080"
            guard let url = URL(string: server + "/bins") else { fail("not a URL: \(server)", status: 2) }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBody = Data()
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 || status == 201,
                  let made = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["url"] as? String, let madeURL = URL(string: made)
            else { fail("\(server) did not make a bin (HTTP \(status)): is byteclub-server running there?") }
            bin = madeURL
        }
        Settings(binURL: bin).save()
        print("posts go to \(bin.absoluteString)")
        print("see them at \(bin.absoluteString)?inspect")
    } catch {
        fail(TransferFailure.details(error))
    }
case "share":
    // The tutorial's image and text, unless others are given.
    let bundled = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("highland-cow.jpg").path
    let image = arguments.dropFirst().first { !$0.hasPrefix("--") && $0 != option("--text", in: arguments) } ?? bundled
    var shareArguments = ["share", image, "--text", option("--text", in: arguments) ?? "Highland Cow"]
    if arguments.contains("--post") { shareArguments += ["--to", ShareAlike.extensionBundleIdentifier, "--post"] }
    do { exit(try runProgram(siblingProgram("ferry"), shareArguments)) } catch { fail("cannot run ferry: \(error)") }
case "history":
    do {
        let entries = try ShareAlike.history().read()
        let outcomes = Dictionary(entries.filter { $0.event == .completed }.map { ($0.task, $0) }, uniquingKeysWith: { first, _ in first })
        let posts = entries.filter { $0.event == .posted }
        if posts.isEmpty { print("nothing posted yet") }
        let dates = ISO8601DateFormatter()
        for post in posts {
            let image = post.post?.image_details.map { " + image \($0.width)×\($0.height), UIKit orientation \($0.orientation)" } ?? ""
            let outcome: String
            if let done = outcomes[post.task] {
                outcome = done.error ?? "HTTP \(done.status.map(String.init) ?? "?")"
            } else {
                outcome = "pending (ferryd is carrying it)"
            }
            print("\(dates.string(from: post.date))  #\(post.task)  \"\(post.post?.text ?? "")\"\(image)  → \(outcome)")
        }
    } catch {
        fail("\(error)")
    }
default:
    print("""
        usage: sharealike setup [--server URL | --bin URL]
               sharealike share [IMAGE] [--text T] [--post]
               sharealike history
        (ferryd starts sharealike by itself when posts finish)
        """)
}
