import Ferry
import Foundation
import PhotoDropKit

// photodrop-share FILE URL [AUTHORIZATION] [--wait] [--announce URL]: the share extension.
// It hands the upload to the group's background session and exits at once; ferryd carries
// the upload and starts the PhotoDrop app to tell it how it went. With --wait it stays until
// the upload completes (then it handles the completion itself, with the same code as the app).
// With --announce it first posts a short JSON note in-process, kept alive by ProcessActivity
// (a SIGTERM meanwhile waits until the note is sent): short requests need no background session.
//
//     photodrop-share cow.jpg http://127.0.0.1:8080/3/image "Client-ID 0123456789abcdef"
var arguments = Array(CommandLine.arguments.dropFirst())
let wait = arguments.contains("--wait")
arguments.removeAll { $0 == "--wait" }
var announceURL: URL?
if let flag = arguments.firstIndex(of: "--announce"), flag + 1 < arguments.count {
    announceURL = URL(string: arguments[flag + 1])
    arguments.removeSubrange(flag...(flag + 1))
}
guard arguments.count >= 2, let url = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: photodrop-share FILE URL [AUTHORIZATION] [--wait]\n".utf8))
    exit(2)
}
let delegate = UploadsDelegate(role: "extension")
do {
    if let announceURL {
        let file = URL(fileURLWithPath: arguments[0])
        try await ProcessActivity.perform(reason: "announce the upload") { _ in
            var note = Request(url: announceURL, method: "POST")
            note.headers.add(name: "Content-Type", value: "application/json")
            note.body = try JSONEncoder().encode(["file": file.lastPathComponent])
            let status = try await Session.shared.data(for: note).1.statusCode
            FileHandle.standardOutput.write(Data("announced \(status)\n".utf8))
        }
    }
    let session = try Session.background(PhotoDrop.configuration, delegate: delegate)
    var request = Request(url: url, method: "POST")
    request.headers.add(name: "Content-Type", value: "application/octet-stream")
    if arguments.count >= 3 { request.headers.add(name: "Authorization", value: arguments[2]) }
    let task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: arguments[0]))
    task.resume()  // the task is in ferryd's store when this returns
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    // Unbuffered: the test compares this time with the moment the process is gone.
    FileHandle.standardOutput.write(Data("task \(task.taskIdentifier)\nresumed-at \(UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))\n".utf8))
    if wait {
        await task.waitUntilCompleted()
    }
    session.finishTasksAndInvalidate()
    exit(0)
} catch {
    FileHandle.standardError.write(Data("photodrop-share: \(error)\n".utf8))
    exit(1)
}
