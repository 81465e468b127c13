import ArgumentParser
import FerryApps
import Foundation
import ShareKit

/// `ferry share FILE… [--text T] [--url U]`: the share sheet (docs/sharekit.md).
struct Share: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share files, text or a URL with an installed share extension.",
        discussion: """
            Builds the items (each file's type read from its bytes), offers the installed share
            extensions whose activation rules accept them, and runs the chosen one: its compose
            sheet takes the terminal (Enter posts, Esc cancels). For scripts, name the extension
            with --to and add --post: the text is posted as given, with no screen.

            Exit codes: 0 posted; 1 cancelled, refused by the extension's rule, or the
            extension failed; 2 bad usage (no items, --post without --to, no terminal to choose
            on); 26 a FILE cannot be read.
            """)

    @Argument(help: "Files to share.") var files: [String] = []
    @Option(name: .long, help: "Text to share (the compose sheet starts with it).") var text: String?
    @Option(name: .long, help: "A web address to share (repeatable).") var url: [String] = []
    @Option(name: .long, help: "The share extension's bundle identifier; skips the choice.") var to: String?
    @Flag(name: .long, help: "Post at once without a compose screen (needs --to).") var post = false
    @Flag(name: .long, help: "List the share extensions and whether they accept the items; share nothing.") var list = false
    @Flag(name: .long, help: "Print JSON on standard output, for scripts.") var json = false

    func validate() throws {
        if files.isEmpty && url.isEmpty && (text ?? "").isEmpty {
            throw ValidationError("nothing to share: give FILEs, --text or --url")
        }
        if post && to == nil { throw ValidationError("--post needs --to BUNDLE_ID (which extension posts)") }
        for address in url where URL(string: address)?.scheme == nil {
            throw ValidationError("not a URL: \(address)")
        }
    }

    func run() async throws {
        do {
            let items = try makeItems()
            let sheet = ShareSheet(registry: AppRegistry(paths: try AppsAccess.paths()))
            let choices = try AppsAccess.run(file: nil) { try sheet.choices(for: items) }
            if list { return printList(choices) }
            let choice = try choose(from: choices)
            let presentation: ShareRequest.Presentation = post ? .post : .terminal
            if presentation == .terminal, isatty(STDIN_FILENO) != 1 || isatty(STDOUT_FILENO) != 1 {
                throw CLIFailure(exitStatus: ExitStatus.usage, code: "noTerminal", message: "the compose sheet needs a terminal; add --post to share without one")
            }
            let result = try await sheet.run(choice, items: items, presentation: presentation)
            report(result, choice: choice)
            if result.outcome.kind != .completed { throw ExitCode(ExitStatus.failure) }
        } catch let failure as CLIFailure {
            // Said as every command says it: one line on stderr (and JSON with --json), the status documented.
            throw failure.report(url: nil, json: json)
        } catch let error as ShareKitError {
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "shareFailed", message: "\(error)").report(url: nil, json: json)
        }
    }

    /// One item: the text, then the files (typed by their bytes) and the URLs, in order.
    private func makeItems() throws -> [ExtensionItem] {
        var attachments: [ItemProvider] = []
        for file in files {
            guard access(file, R_OK) == 0 else {
                throw CLIFailure(exitStatus: ExitStatus.cannotRead, code: "cannotReadFile", message: "cannot read \(file): \(String(cString: strerror(errno)))")
            }
            attachments.append(try ItemProvider(contentsOf: URL(fileURLWithPath: file)))
        }
        for address in url { attachments.append(ItemProvider(url: URL(string: address)!)) }
        return [ExtensionItem(contentText: text, attachments: attachments)]
    }

    private func choose(from choices: [ShareSheet.Choice]) throws -> ShareSheet.Choice {
        if let to {
            guard let choice = choices.first(where: { $0.appExtension.bundleIdentifier == to }) else {
                throw CLIFailure(exitStatus: ExitStatus.failure, code: "noSuchExtension", message: "no share extension \(to) is installed (see `ferry share --list …`)")
            }
            if let refusal = choice.refusal {
                throw CLIFailure(exitStatus: ExitStatus.failure, code: "refusedByRule", message: "\(choice.appExtension.name) does not accept these items: \(refusal)")
            }
            return choice
        }
        let offered = choices.filter(\.isOffered)
        guard !offered.isEmpty else {
            let reasons = choices.map { "  \($0.appExtension.name) (\($0.appExtension.bundleIdentifier)): \($0.refusal ?? "")" }
            throw CLIFailure(exitStatus: ExitStatus.failure, code: "noExtension",
                             message: (["no installed share extension accepts these items"] + reasons).joined(separator: "\n"))
        }
        guard isatty(STDIN_FILENO) == 1 else {
            let names = offered.map(\.appExtension.bundleIdentifier).joined(separator: ", ")
            throw CLIFailure(exitStatus: ExitStatus.usage, code: "noTerminal", message: "choose an extension with --to (offered: \(names))")
        }
        Console.error("Share with:")
        for (index, choice) in offered.enumerated() {
            Console.error("  \(index + 1)) \(choice.appExtension.name)  (\(choice.app.name))")
        }
        for _ in 0..<5 {
            FileHandle.standardError.write(Data("choose 1–\(offered.count), or q: ".utf8))
            guard let line = readLine()?.trimmingCharacters(in: .whitespaces) else { break }
            if line == "q" { break }
            if let number = Int(line), offered.indices.contains(number - 1) { return offered[number - 1] }
        }
        throw CLIFailure(exitStatus: ExitStatus.failure, code: "cancelled", message: "nothing shared")
    }

    private struct Listed: Encodable {
        var bundleIdentifier: String
        var name: String
        var app: String
        var offered: Bool
        var refusal: String?
    }

    private func printList(_ choices: [ShareSheet.Choice]) {
        let listed = choices.map {
            Listed(bundleIdentifier: $0.appExtension.bundleIdentifier, name: $0.appExtension.name, app: $0.app.bundleIdentifier,
                   offered: $0.isOffered, refusal: $0.refusal)
        }
        if json { return JSONOutput.print(listed) }
        if listed.isEmpty { Console.out("no share extensions are installed (ferry apps install MANIFEST)") }
        for entry in listed {
            Console.out("\(entry.offered ? "offered" : "not offered")  \(entry.name)  \(entry.bundleIdentifier)" + (entry.refusal.map { ": \($0)" } ?? ""))
        }
    }

    private struct Reported: Encodable {
        var extensionBundleIdentifier: String
        var outcome: String
        var error: String?
        var exitStatus: Int32
        var exitAfterPostMilliseconds: Double?
    }

    private func report(_ result: ShareSheet.Result, choice: ShareSheet.Choice) {
        let milliseconds = result.exitAfterPost.map { Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000 }
        if json {
            return JSONOutput.print(Reported(
                extensionBundleIdentifier: choice.appExtension.bundleIdentifier, outcome: result.outcome.kind.rawValue,
                error: result.outcome.error, exitStatus: result.exitStatus, exitAfterPostMilliseconds: milliseconds))
        }
        switch result.outcome.kind {
        case .completed:
            let after = milliseconds.map { String(format: "; it exited %.1f ms after Post", $0) } ?? ""
            Console.out("shared with \(choice.appExtension.name)\(after)")
        case .cancelled:
            Console.error("not shared: \(result.outcome.error ?? "cancelled")")
        }
    }
}
