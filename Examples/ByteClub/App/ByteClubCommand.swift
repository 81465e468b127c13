import ArgumentParser
import ByteClubKit
import Ferry
import Foundation

/// byteclub: the Byte Club app — the members of a club share notes and photos in one folder of
/// a Dropbox-v1-style service (byteclub-server), written on the Ferry library only, in URLSession's spelling.
@main
struct ByteClubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "byteclub",
        abstract: "Share notes and photos with your club (byteclub-server), on Ferry.",
        discussion: """
            Sign in once with `byteclub login`; BYTECLUB_SERVER and BYTECLUB_ACCESS_TOKEN in the
            environment override the saved account. Exit statuses: 1 local file, 2 usage, 3 sign in
            again, 4 refused request, 5 not found, 6 server busy, 7 over quota, 8 server unreachable,
            9 server error, 130 cancelled (docs/byteclub.md).
            """,
        subcommands: [Login.self, Logout.self, Notes.self, Photos.self, History.self])

    /// No command: the full-screen app.
    func run() async throws {
        try await ScreenApp(club: try signedInClub()).run()
    }

    /// Commands report a ``ByteClubError`` as one line and its exit status.
    static func main() async {
        ByteClub.bootstrapLogging()
        // Started by ferryd for the background uploads' events: record them, then exit (Ferry's
        // BackgroundLaunch: what the platform's app delegate gets in handleEventsForBackgroundURLSession).
        if let launch = BackgroundLaunch.current {
            do {
                Foundation.exit(try await BackgroundUploads.handle(launch, paths: ByteClubPaths()) ? 0 : 3)
            } catch {
                report(error)
            }
        }
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            report(error)
        }
    }

    /// One line on standard error and the error's exit status.
    static func report(_ error: any Error) -> Never {
        guard let error = error as? ByteClubError else { exit(withError: error) }
        say(error: "\(error)")
        Foundation.exit(error.exitStatus)
    }
}

/// The signed-in club, for commands that need one; its notices go to standard error.
func signedInClub() throws -> ByteClub {
    ByteClub(account: try ByteClubAccount.current(), notice: { say(error: $0) })
}

func say(error line: String) {
    FileHandle.standardError.write(Data("byteclub: \(line)\n".utf8))
}

/// Prints `value` as pretty JSON on standard output.
func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Forget the saved account.")

    func run() throws {
        print(try AccountFile().remove() ? "signed out" : "not signed in")
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "What the background uploads did: each one once, when it ended.")
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let outcomes = try ByteClubKit.History(paths: ByteClubPaths()).read()
        if json { return try printJSON(outcomes) }
        if outcomes.isEmpty { return print("no background upload has ended yet") }
        printColumns(outcomes.map { outcome in
            let result = outcome.error ?? "stored as \(outcome.storedAs ?? "?")"
            return [listingDate(outcome.date), "#\(outcome.task)", outcome.name, outcome.status.map { "HTTP \($0)" } ?? "-", result]
        })
    }
}
