import Ferry
import Foundation
import PhotoDropKit

// photodrop: the containing app. Started by ferryd (FERRY_BACKGROUND_SESSION set) it
// reconnects to the session, records each finished upload, and exits when ferryd has
// delivered everything. `photodrop history` prints what was recorded.
if let launch = BackgroundLaunch.current {
    let delegate = UploadsDelegate(role: "app", whenEventsFinished: launch.completionHandler)
    do {
        let session = try Session.background(PhotoDrop.configuration, delegate: delegate)
        let finished = await launch.waitForCompletionHandler(timeout: .seconds(120))
        session.finishTasksAndInvalidate()
        exit(finished ? 0 : 3)
    } catch {
        FileHandle.standardError.write(Data("photodrop: \(error)\n".utf8))
        exit(1)
    }
}

switch CommandLine.arguments.dropFirst().first {
case "history":
    do {
        for record in try UploadLog.read() {
            print("#\(record.task)  \(record.status.map(String.init) ?? "-")  by \(record.handledBy)  \(record.error ?? record.response ?? "")")
        }
    } catch {
        FileHandle.standardError.write(Data("photodrop: \(error)\n".utf8))
        exit(1)
    }
default:
    print("usage: photodrop history   (ferryd starts photodrop by itself when uploads finish)")
}
