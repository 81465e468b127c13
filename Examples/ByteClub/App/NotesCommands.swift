import ArgumentParser
import ByteClubKit
import Foundation

struct Notes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The club's notes: list them, or show, write and edit one.",
        subcommands: [List.self, Show.self, New.self, Edit.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the notes: name, author, modified, size.")
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let notes = try await signedInClub().notes()
            if json { return try printJSON(notes.map(\.metadata)) }
            if notes.isEmpty { return print("no notes yet: write one with `byteclub notes new NAME`") }
            printColumns(notes.map { note in
                [note.name, note.author ?? "-", note.metadata.modified.map(listingDate) ?? "-", "\(note.metadata.bytes) B"]
            })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a note.")
        @Argument(help: "The note's name (.txt added when missing).") var name: String

        func run() async throws {
            let (text, _) = try await signedInClub().readNote(named: noteName(name))
            // Exact when piped; on a terminal, control characters are shown, not obeyed.
            let shown = isatty(STDOUT_FILENO) == 1 ? displaySafe(text, keepingNewlines: true) : text
            print(shown, terminator: shown.hasSuffix("\n") ? "" : "\n")
        }
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write a new note (text from --text, standard input, or $EDITOR).")
        @Argument(help: "The note's name (.txt added when missing).") var name: String
        @Option(help: "The note's text.") var text: String?

        func run() async throws {
            let name = noteName(name)
            let body = try text ?? noteText(editing: "")
            let saved = try await signedInClub().saveNote(named: name, text: body)
            print(saved.metadata.name == name ? "saved \(name)" : "\(name) exists; saved as \(saved.metadata.name)")
        }
    }

    struct Edit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Edit the latest revision of a note (new text from --text, standard input, or $EDITOR).",
            discussion: "When another member saved it meanwhile, both are kept: yours as a conflicted copy, whose name is printed.")
        @Argument(help: "The note's name (.txt added when missing).") var name: String
        @Option(help: "The note's new text.") var text: String?

        func run() async throws {
            let club = try signedInClub()
            let name = noteName(name)
            let (current, metadata) = try await club.readNote(named: name)
            let body = try text ?? noteText(editing: current)
            guard body != current else { return print("\(name) unchanged") }
            let saved = try await club.saveNote(named: name, text: body, parentRev: metadata.rev)
            if saved.isConflictedCopy {
                print("\(name) was changed by another member meanwhile; your text is kept as \(saved.metadata.name)")
            } else {
                print("saved \(name)")
            }
        }
    }
}

/// Notes are `.txt` files; `hello` means `hello.txt`.
func noteName(_ name: String) -> String {
    name.lowercased().hasSuffix(".txt") ? name : name + ".txt"
}

/// The text of a note: standard input when it is not a terminal (and `fromStandardInput`),
/// else `$VISUAL` or `$EDITOR` (`vi`) on a temporary file holding `initial`.
func noteText(editing initial: String, fromStandardInput: Bool = true) throws -> String {
    if fromStandardInput && isatty(STDIN_FILENO) == 0 {
        return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
    }
    // A folder of the member's own (0700, a name nobody can guess), so no one else reads the note.
    var template = Array((FileManager.default.temporaryDirectory.path + "/byteclub-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw ByteClubError.local("cannot make a temporary folder for the editor") }
    let folder = URL(fileURLWithPath: String(cString: made))
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("note.txt")
    try Data(initial.utf8).write(to: file, options: .withoutOverwriting)
    let editor = ProcessInfo.processInfo.environment["VISUAL"] ?? ProcessInfo.processInfo.environment["EDITOR"] ?? "vi"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "\(editor) \"$1\"", "editor", file.path]
    try process.run()
    // Ctrl-C in the editor is the editor's (vi leaves insert mode with it), not a reason to quit.
    let interrupt = signal(SIGINT, SIG_IGN)
    let quit = signal(SIGQUIT, SIG_IGN)
    process.waitUntilExit()
    signal(SIGINT, interrupt)
    signal(SIGQUIT, quit)
    guard process.terminationStatus == 0 else { throw ByteClubError.cancelled }
    return String(decoding: try Data(contentsOf: file), as: UTF8.self)
}
