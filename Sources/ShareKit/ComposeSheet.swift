import Foundation

/// The compose sheet on a terminal: the text being written, the characters remaining (red
/// below zero), Post enabled only while the content is valid, a line per attachment.
/// Enter posts, Esc (or Ctrl-C) cancels, Backspace and Delete delete, the arrows, Home and End
/// (or Ctrl-A and Ctrl-E) move the cursor, Ctrl-U clears.
@MainActor
final class ComposeSheet {
    private let controller: ComposeServiceController
    private let terminal: Terminal
    private var attachmentLines: [String] = []
    private var message: String?
    /// The text as typed here and the cursor in it; the controller's `contentText` follows it
    /// (and an extension that sets `contentText` itself puts the cursor at the end).
    private var editing = EditedText()
    private let postDeadline: Duration

    init(controller: ComposeServiceController, terminal: Terminal, postDeadline: Duration) {
        self.controller = controller
        self.terminal = terminal
        self.postDeadline = postDeadline
    }

    /// Shows the sheet until the extension ends the request.
    func run() async {
        defer { terminal.restore() }
        controller.changed = { [weak self] in self?.draw() }
        attachmentLines = await Self.describe(controller.extensionContext.inputItems)
        controller.validateContent()
        controller.presentationAnimationDidFinish()
        draw()
        let context = controller.extensionContext
        // Keys on a task of their own: the extension may also end the request by itself
        // (a failed load), and then the sheet closes without waiting for a key.
        let keys = Task { @MainActor in
            for await key in self.terminal.keys() {
                guard context.outcome == nil else { return }
                self.handle(key)
                if key == .enter, self.controller.isPostEnabled, context.outcome == nil {
                    await self.post()
                    return
                }
            }
            // The terminal went away: nobody can post any more.
            if context.outcome == nil { self.controller.didSelectCancel() }
        }
        _ = await context.ended()
        keys.cancel()
        controller.changed = nil
    }

    private func handle(_ key: Terminal.Key) {
        message = nil
        if editing.text != controller.contentText { editing = EditedText(controller.contentText) }
        switch key {
        case .text(let typed): editing.insert(typed)
        case .backspace: editing.deleteBackward()
        case .delete: editing.deleteForward()
        case .left: editing.moveLeft()
        case .right: editing.moveRight()
        case .home: editing.moveToStart()
        case .end: editing.moveToEnd()
        case .clearLine: editing.clear()
        case .escape, .interrupt: controller.didSelectCancel()
        case .enter:
            if !controller.isPostEnabled {
                message = "Post is disabled until the content is valid"
                terminal.write("\u{07}")
            }
        case .other: break
        }
        if editing.text != controller.contentText { controller.contentText = editing.text }
        draw()
    }

    /// Post: waits for attachments still loading, then lets the extension hand its work over.
    private func post() async {
        if controller.isLoading {
            message = "waiting for attachments to load…"
            draw()
            await controller.finishLoading()
        }
        controller.extensionContext.markPostSelected()
        controller.didSelectPost()
        message = "posting…"
        draw()
        let deadline = ShareExtension.cancel(controller.extensionContext, after: postDeadline)
        _ = await controller.extensionContext.ended()
        deadline.cancel()
    }

    private func draw() {
        let text = controller.contentText
        let cursor = editing.text == text ? editing.cursor : text.count
        let screen = Self.render(
            title: controller.title, text: text, cursor: cursor, placeholder: controller.placeholder,
            charactersRemaining: controller.charactersRemaining, postEnabled: controller.isPostEnabled,
            loading: controller.isLoading, attachments: attachmentLines, message: message, width: terminal.width)
        terminal.write(screen)
    }

    /// The whole screen for this state (ANSI: home, clear, then the lines).
    nonisolated static func render(
        title: String, text: String, cursor: Int? = nil, placeholder: String?, charactersRemaining: Int?, postEnabled: Bool,
        loading: Bool, attachments: [String], message: String?, width: Int
    ) -> String {
        let inner = max(20, min(width, 100) - 4)
        var lines: [String] = []
        let heading = "─ \(title) "
        lines.append("╭" + heading + String(repeating: "─", count: max(0, inner + 2 - heading.count)) + "╮")
        var body: [String]
        if text.isEmpty, let placeholder {
            body = ["█\u{1B}[2m" + String(placeholder.prefix(inner - 1)) + "\u{1B}[0m"]
        } else {
            body = withCursor(wrappedLines(text, width: inner), at: min(cursor ?? text.count, text.count), width: inner)
        }
        while body.count < 3 { body.append("") }
        for line in body {
            let visible = visibleCount(line)
            lines.append("│ " + line + String(repeating: " ", count: max(0, inner - visible)) + " │")
        }
        lines.append("╰" + String(repeating: "─", count: inner + 2) + "╯")
        var status = ""
        if let remaining = charactersRemaining {
            status += remaining < 0 ? "\u{1B}[31m\(remaining)\u{1B}[0m" : "\(remaining)"
            status += " characters remaining   "
        }
        status += "[Esc] Cancel   "
        status += postEnabled ? "\u{1B}[1m[Enter] Post\u{1B}[0m" : "\u{1B}[2m[Enter] Post (disabled)\u{1B}[0m"
        lines.append(" " + status)
        if loading { lines.append(" loading attachments…") }
        for attachment in attachments { lines.append("  " + attachment) }
        if let message { lines.append(" " + message) }
        return "\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Lines of at most `width` characters, breaking at spaces where it can, each with the
    /// offset (in characters) of its first character in `text`: a space a line breaks at, and
    /// a newline, belong to no line.
    nonisolated static func wrappedLines(_ text: String, width: Int) -> [(text: String, start: Int)] {
        var lines: [(text: String, start: Int)] = []
        var offset = 0
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            var start = offset
            for character in paragraph {
                if line.count == width {
                    if let space = line.lastIndex(of: " "), space != line.startIndex {
                        let kept = String(line[..<space])
                        lines.append((kept, start))
                        start += kept.count + 1
                        line = String(line[line.index(after: space)...])
                    } else {
                        lines.append((line, start))
                        start += line.count
                        line = ""
                    }
                }
                line.append(character)
            }
            lines.append((line, start))
            offset += paragraph.count + 1
        }
        return lines
    }

    /// The lines with the cursor drawn before character `cursor`: that character in inverse
    /// video, or a block after the line's end (at the text's end, or on a space a line broke
    /// at), on a line of its own when the line is `width` long.
    nonisolated static func withCursor(_ lines: [(text: String, start: Int)], at cursor: Int, width: Int) -> [String] {
        // The last line that starts at or before the cursor holds it.
        let holder = lines.lastIndex { $0.start <= cursor } ?? 0
        return lines.enumerated().flatMap { index, line -> [String] in
            guard index == holder else { return [line.text] }
            let column = cursor - line.start
            guard column < line.text.count else { return line.text.count < width ? [line.text + "█"] : [line.text, "█"] }
            let at = line.text.index(line.text.startIndex, offsetBy: column)
            return [String(line.text[..<at]) + "\u{1B}[7m" + String(line.text[at]) + "\u{1B}[0m" + String(line.text[line.text.index(after: at)...])]
        }
    }

    /// Characters that take a column (ANSI sequences take none).
    nonisolated static func visibleCount(_ line: String) -> Int {
        var count = 0
        var inEscape = false
        for character in line {
            if inEscape { if character.isLetter { inEscape = false }; continue }
            if character == "\u{1B}" { inEscape = true; continue }
            count += 1
        }
        return count
    }

    /// One line per attachment: type, name, size, and an image's dimensions as shown (with the
    /// stored ones and the EXIF orientation when it is turned).
    nonisolated static func describe(_ items: [ExtensionItem]) async -> [String] {
        await Task.detached {
            items.flatMap(\.attachments).map { attachment in
                var parts: [String] = [attachment.registeredTypeIdentifiers.first?.rawValue ?? "?"]
                if let name = attachment.suggestedName { parts.append(name) }
                if let bytes = attachment.byteCount { parts.append(ByteCountFormatter.string(fromByteCount: bytes, countStyle: .file)) }
                if let file = attachment.fileURL, attachment.hasItemConforming(toTypeIdentifier: .image),
                   let details = try? ImageDetails.read(fileAt: file) {
                    parts.append("\(details.width) × \(details.height)")  // as shown
                    if details.orientation != .up {
                        parts.append("stored \(details.pixelWidth) × \(details.pixelHeight), EXIF orientation \(details.exifOrientation)")
                    }
                }
                return parts.joined(separator: "  ")
            }
        }.value
    }
}
