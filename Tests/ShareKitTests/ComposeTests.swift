import FerryApps
import Foundation
import Testing
@testable import ShareKit

/// The compose sheet's logic without a terminal: the lifecycle ShareKit drives, the outcome an
/// extension writes for the share sheet, the keys and the screen.
@Suite("Compose lifecycle and the extension's ending")
struct ComposeTests {
    /// A compose controller like the tutorial's: 25 characters, loads an attachment slowly.
    @MainActor
    final class LimitedController: ComposeServiceController {
        static let limit = 25
        var loaded = false
        var postedWithLoad: Bool?
        var calls: [String] = []

        override func presentationAnimationDidFinish() {
            calls.append("presentation")
            load {
                try? await Task.sleep(for: .milliseconds(100))
                self.loaded = true
            }
        }

        override func isContentValid() -> Bool {
            charactersRemaining = Self.limit - contentText.count
            return charactersRemaining! >= 0
        }

        override func didSelectPost() {
            calls.append("post")
            postedWithLoad = loaded
            extensionContext.completeRequest(returningItems: [ExtensionItem(contentText: "done")])
        }
    }

    /// Never ends the request.
    @MainActor
    final class SilentController: ComposeServiceController {
        override func didSelectPost() {}
    }

    static func request(text: String) -> ShareRequest {
        ShareRequest(extensionBundleIdentifier: "org.example.share", extensionName: "Example",
                     items: [ExtensionItem(contentText: text)], presentation: .post)
    }

    @Test("--post: presentation, then Post only after the attachment loaded; the outcome file says completed with the Post time")
    @MainActor
    func postWaitsForLoads() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sharekit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let resultPath = directory.appendingPathComponent("result.json").path
        let before = MonotonicClock.nanoseconds()
        let outcome = await ShareExtension.run(LimitedController.self, request: Self.request(text: "Highland Cow"), resultPath: resultPath)
        #expect(outcome.kind == .completed)
        #expect(outcome.returnedItems == [ExtensionItem(contentText: "done")])
        let posted = try #require(outcome.postSelectedAt)
        #expect(posted >= before && posted <= outcome.endedAt)
        let written = try JSONDecoder().decode(ShareOutcome.self, from: Data(contentsOf: URL(fileURLWithPath: resultPath)))
        #expect(written == outcome)
    }

    @Test("--post with text over the limit: not posted, cancelled with how many characters too many")
    @MainActor
    func invalidContentIsNotPosted() async {
        let outcome = await ShareExtension.run(LimitedController.self, request: Self.request(text: String(repeating: "x", count: 30)), resultPath: nil)
        #expect(outcome.kind == .cancelled)
        #expect(outcome.error?.contains("5 characters too many") == true)
        #expect(outcome.postSelectedAt == nil)
    }

    @Test("the controller sees the lifecycle in order and the text's remaining characters on every change")
    @MainActor
    func lifecycleOrder() async {
        let context = ExtensionContext(inputItems: [], bundleIdentifier: "org.example.share", resultPath: nil)
        let controller = LimitedController(extensionContext: context)
        controller.contentText = "Highland Cow"
        #expect(controller.charactersRemaining == 13)
        #expect(controller.isPostEnabled)
        controller.contentText += String(repeating: "!", count: 14)
        #expect(controller.charactersRemaining == -1)
        #expect(!controller.isPostEnabled)
        controller.contentText.removeLast()
        #expect(controller.charactersRemaining == 0)
        #expect(controller.isPostEnabled)
        controller.presentationAnimationDidFinish()
        #expect(controller.isLoading)
        await controller.finishLoading()
        #expect(!controller.isLoading && controller.loaded)
        #expect(controller.calls == ["presentation"])
    }

    @Test("the first ending counts: a cancel after completeRequest changes nothing")
    func firstEndingCounts() async {
        let context = ExtensionContext(inputItems: [], bundleIdentifier: "org.example.share", resultPath: nil)
        context.completeRequest(returningItems: [])
        context.cancelRequest(withError: ShareKitError("too late"))
        #expect(context.outcome?.kind == .completed)
        #expect(await context.ended().kind == .completed)
    }

    @Test("an extension that never ends the request after Post is cancelled at the deadline")
    @MainActor
    func silentExtensionIsCancelled() async {
        let outcome = await ShareExtension.run(SilentController.self, request: Self.request(text: "hi"), resultPath: nil, postDeadline: .milliseconds(200))
        #expect(outcome.kind == .cancelled)
        #expect(outcome.error?.contains("did not end the request") == true)
    }

    @Test("a request file from a newer share sheet, or none, is refused with a clear message")
    func requestFiles() throws {
        #expect(throws: ShareKitError.self) { try ShareRequest.current(environment: [:]) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("request-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        var request = Self.request(text: "x")
        request.version = 99
        try JSONEncoder().encode(request).write(to: file)
        do {
            _ = try ShareRequest.current(environment: [ShareRequest.requestVariable: file.path])
            Issue.record("a version 99 request was accepted")
        } catch let error as ShareKitError {
            #expect(error.message.contains("version 99"))
        }
        try Data("{\"items\": 3}".utf8).write(to: file)
        #expect(throws: ShareKitError.self) { try ShareRequest.current(environment: [ShareRequest.requestVariable: file.path]) }
    }

    @Test("keys: text, Backspace, Enter, a lone Esc, left, right, Home, End and Delete in xterm's and the console's forms, up and down ignored, UTF-8 kept whole")
    func keys() {
        #expect(Terminal.decode(Array("abc".utf8)) == [.text("abc")])
        #expect(Terminal.decode([0x7F]) == [.backspace])
        #expect(Terminal.decode([0x0D]) == [.enter])
        #expect(Terminal.decode([0x1B]) == [.escape])
        #expect(Terminal.decode([0x1B, 0x5B, 0x41]) == [.other])
        let sequences: [(String, Terminal.Key)] = [
            ("[D", .left), ("OD", .left), ("[C", .right), ("[H", .home), ("OH", .home), ("[1~", .home), ("[7~", .home),
            ("[F", .end), ("OF", .end), ("[4~", .end), ("[8~", .end), ("[3~", .delete), ("[B", .other), ("[5~", .other),
        ]
        for (sequence, key) in sequences { #expect(Terminal.decode([0x1B] + Array(sequence.utf8)) == [key], "ESC \(sequence)") }
        #expect(Terminal.decode([0x01, 0x05]) == [.home, .end], "Ctrl-A, Ctrl-E")
        // One read, several keys (key repeat, a multiplexer's batching): none lost, none typed.
        #expect(Terminal.decode(Array("\u{1B}[D\u{1B}[D".utf8)) == [.left, .left])
        #expect(Terminal.decode(Array("x\u{1B}[Dy\u{1B}[3~".utf8)) == [.text("x"), .left, .text("y"), .delete])
        #expect(Terminal.decode(Array("a\u{1B}".utf8)) == [.text("a"), .escape], "a lone ESC ending the read")
        #expect(Terminal.decode(Array("\u{1B}xz".utf8)) == [.other, .text("z")], "Alt-x")
        #expect(Terminal.decode(Array("\u{1B}[".utf8)) == [.other], "a sequence cut by the read's end")
        #expect(Terminal.decode([0x03]) == [.interrupt])
        #expect(Terminal.decode(Array("é!".utf8) + [0x7F]) == [.text("é!"), .backspace])
    }

    @Test("the screen: remaining characters in red below zero, Post marked disabled, long text wrapped inside the box")
    func screen() {
        let over = ComposeSheet.render(title: "ShareAlike", text: String(repeating: "a", count: 30), placeholder: nil, charactersRemaining: -5,
                                       postEnabled: false, loading: false, attachments: ["public.jpeg  cow.jpg  9 KB  480 × 320"], message: nil, width: 30)
        #expect(over.contains("\u{1B}[31m-5\u{1B}[0m characters remaining"))
        #expect(over.contains("[Enter] Post (disabled)"))
        #expect(over.contains("public.jpeg  cow.jpg"))
        let boxLines = over.components(separatedBy: "\r\n").filter { $0.hasPrefix("│") }
        #expect(boxLines.count >= 2)
        #expect(Set(boxLines.map(ComposeSheet.visibleCount)).count == 1, "box lines differ in width")
        let fine = ComposeSheet.render(title: "ShareAlike", text: "Highland Cow", placeholder: nil, charactersRemaining: 13,
                                       postEnabled: true, loading: true, attachments: [], message: nil, width: 80)
        #expect(fine.contains("13 characters remaining"))
        #expect(!fine.contains("\u{1B}[31m"))
        #expect(!fine.contains("(disabled)"))
        #expect(fine.contains("loading attachments"))
        #expect(ComposeSheet.wrappedLines("one two three", width: 7).map(\.text) == ["one", "two", "three"])
    }

    @Test("editing: insert, Backspace and Delete at the cursor, moves that stop at both ends, Ctrl-U, characters not bytes")
    func editing() {
        var text = EditedText("Highland Cw")
        text.moveLeft()
        text.insert("o")
        #expect(text.text == "Highland Cow" && text.cursor == 11)
        text.moveToStart()
        text.moveLeft()
        #expect(text.cursor == 0)
        text.deleteBackward()
        text.deleteForward()
        #expect(text.text == "ighland Cow" && text.cursor == 0)
        text.insert("H")
        text.moveToEnd()
        text.moveRight()
        text.deleteForward()
        #expect(text.text == "Highland Cow" && text.cursor == 12)
        text.insert("s é")
        text.moveLeft()
        text.deleteBackward()
        #expect(text.text == "Highland Cowsé" && text.cursor == 13)
        text.clear()
        #expect(text == EditedText())
        // Typed text that joins the character before it (a combining accent): the cursor stays
        // within the text, after what was typed.
        var joined = EditedText("e")
        joined.insert("\u{301}")
        #expect(joined.text == "é" && joined.cursor == 1)
        joined.insert("!")
        joined.deleteBackward()
        joined.moveToStart()
        joined.insert("a")
        joined.insert("\u{301}x")
        #expect(joined.text == "áxé" && joined.cursor == 2)
    }

    @Test("the screen's cursor: the character under it in inverse video, a block at the end, on the right line of wrapped text")
    func cursor() {
        let middle = ComposeSheet.render(title: "t", text: "Highland Cow", cursor: 9, placeholder: nil, charactersRemaining: nil,
                                         postEnabled: true, loading: false, attachments: [], message: nil, width: 80)
        #expect(middle.contains("Highland \u{1B}[7mC\u{1B}[0mow"))
        #expect(!middle.contains("█"))
        let end = ComposeSheet.render(title: "t", text: "Highland Cow", placeholder: nil, charactersRemaining: nil,
                                      postEnabled: true, loading: false, attachments: [], message: nil, width: 80)
        #expect(end.contains("Highland Cow█"))
        let lines = ComposeSheet.wrappedLines("one two three", width: 7)
        #expect(lines.map(\.start) == [0, 4, 8])
        #expect(ComposeSheet.withCursor(lines, at: 5, width: 7) == ["one", "t\u{1B}[7mw\u{1B}[0mo", "three"])
        #expect(ComposeSheet.withCursor(lines, at: 3, width: 7) == ["one█", "two", "three"], "on the space a line broke at")
        #expect(ComposeSheet.withCursor(ComposeSheet.wrappedLines("abcdefg", width: 7), at: 7, width: 7) == ["abcdefg", "█"], "a full line")
        let box = ComposeSheet.render(title: "t", text: String(repeating: "x", count: 20), placeholder: nil, charactersRemaining: nil,
                                      postEnabled: true, loading: false, attachments: [], message: nil, width: 20)
        let boxLines = box.components(separatedBy: "\r\n").filter { $0.hasPrefix("│") }
        #expect(Set(boxLines.map(ComposeSheet.visibleCount)).count == 1, "the block on a full line does not widen the box")
    }
}
