import ByteClubKit
import Foundation

/// Draws a ``ClubScreen`` into a `width` × `height` terminal as one string of escape
/// sequences (written at once, so the screen never shows half a frame).
struct ScreenRenderer {
    var width: Int
    var height: Int
    /// Who is signed in where, for the title bar.
    var title: String

    static let inverse = "\u{1B}[7m", bold = "\u{1B}[1m", plain = "\u{1B}[0m"

    func draw(_ screen: ClubScreen) -> String {
        var lines: [String] = []
        lines.append(Self.inverse + fit(" Byte Club — \(title)") + Self.plain)
        lines.append(tabBar(screen.tab))
        switch screen.mode {
        case .reading(let name, let text, let top):
            lines += reading(name, text, top: top)
        case .viewing(let photo):
            lines += viewing(photo, thumbnail: screen.thumbnails[ClubScreen.thumbnailKey(photo)])
        case .browsing, .asking:
            lines += listing(screen)
        }
        while lines.count < height - 2 { lines.append("") }
        lines = Array(lines.prefix(max(height - 2, 0)))
        lines.append(uploadLine(screen))
        lines.append(bottomLine(screen))
        var frame = "\u{1B}[H"
        for (row, line) in lines.enumerated() {
            frame += "\u{1B}[\(row + 1);1H\u{1B}[2K" + line
        }
        if case .asking(let question, let answer) = screen.mode {
            frame += "\u{1B}[\(height);\(min(question.prompt.count + answer.count + 1, width))H\u{1B}[?25h"
        } else {
            frame += "\u{1B}[?25l"
        }
        return frame
    }

    /// `text` made safe, cut or padded to `width` (the screen's unless given; characters, not cells).
    func fit(_ text: String, width: Int? = nil) -> String {
        let width = width ?? self.width
        let text = displaySafe(text)
        return text.count > width ? String(text.prefix(max(width - 1, 0))) + "…" : text.padding(toLength: width, withPad: " ", startingAt: 0)
    }

    private func tabBar(_ current: ClubScreen.Tab) -> String {
        ClubScreen.Tab.allCases.map { tab in
            tab == current ? Self.inverse + " \(tab.title) " + Self.plain : " \(tab.title) "
        }.joined(separator: " ")
    }

    private func listing(_ screen: ClubScreen) -> [String] {
        let rows: [[String]]
        let header: [String]
        switch screen.tab {
        case .notes:
            header = ["NAME", "AUTHOR", "MODIFIED", "SIZE"]
            rows = screen.notes.map { [$0.name, $0.author ?? "-", $0.metadata.modified.map(listingDate) ?? "-", "\($0.metadata.bytes) B"] }
        case .photos:
            // ▣ once the row's thumbnail is in the cache (fetched as the row comes into view).
            header = ["", "NAME", "SIZE", "MODIFIED", "BY"]
            rows = screen.photos.map {
                [screen.thumbnails[ClubScreen.thumbnailKey($0)] == nil ? "·" : "▣", $0.name, ProgressBar.bytes($0.metadata.bytes),
                 $0.metadata.modified.map(listingDate) ?? "-", $0.metadata.modifier?.displayName ?? "-"]
            }
        }
        guard !rows.isEmpty else {
            guard screen.loaded else { return [""] }
            return ["", screen.tab == .notes ? "  No notes yet: n writes one." : "  No photos yet: u uploads one."]
        }
        let lines = columns([header] + rows)
        var out = [Self.bold + fit("  " + lines[0]) + Self.plain]
        for index in screen.visibleRows(height: height) {
            let line = fit((index == screen.selection ? "> " : "  ") + lines[index + 1])
            out.append(index == screen.selection ? Self.inverse + line + Self.plain : line)
        }
        return out
    }

    private func reading(_ name: String, _ text: String, top: Int) -> [String] {
        var wrapped: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var rest = Substring(line)
            repeat {
                wrapped.append(String(rest.prefix(max(width - 2, 1))))
                rest = rest.dropFirst(max(width - 2, 1))
            } while !rest.isEmpty
        }
        let visible = max(height - 5, 1)
        let start = min(top, max(wrapped.count - visible, 0))
        return [Self.bold + fit("  \(name)") + Self.plain] + wrapped.dropFirst(start).prefix(visible).map { "  " + displaySafe($0) }
    }

    /// The upload's progress while one runs, else the last thing said.
    private func viewing(_ photo: Photo, thumbnail: URL?) -> [String] {
        [
            Self.bold + fit("  \(photo.name)") + Self.plain,
            fit("  \(ProgressBar.bytes(photo.metadata.bytes)), \(photo.metadata.modified.map(listingDate) ?? "-"), by \(photo.metadata.modifier?.displayName ?? "-")"),
            fit("  thumbnail: " + (thumbnail?.path ?? "not fetched")),
        ]
    }

    /// The selected photo's thumbnail drawn under its details, in terminals that speak kitty or sixel.
    func picture(_ screen: ClubScreen, images: InlineImages?) -> String {
        guard case .viewing(let photo) = screen.mode, let images, let file = screen.thumbnails[ClubScreen.thumbnailKey(photo)],
              let sequence = images.sequence(for: file, width: min(640, width * 8), height: min(480, max(height - 8, 1) * 16)) else { return "" }
        return "\u{1B}[7;3H" + sequence
    }

    private func uploadLine(_ screen: ClubScreen) -> String {
        guard let upload = screen.upload else { return fit(" " + screen.status) }
        // The key stays on screen: the bar gives way (at 100 columns, a rate of 100 MiB/s and a
        // long ETA pushed "c cancels" off the line).
        let hint = "   c cancels"
        let bar = ProgressBar.line("Uploading \(upload.name)", upload.progress, since: upload.started, baseline: 0, now: Date())
        return fit(fit(bar, width: max(width - hint.count, 0)) + hint)
    }

    private func bottomLine(_ screen: ClubScreen) -> String {
        switch screen.mode {
        case .asking(let question, let answer): return fit(question.prompt + answer)
        case .reading: return Self.inverse + fit(" ↑↓ scroll  e edit  Esc back") + Self.plain
        case .viewing: return Self.inverse + fit(" Esc back") + Self.plain
        case .browsing: return Self.inverse + fit(" ↑↓ move  ←→ tab  Enter open  n new  e edit  u upload  r refresh  q quit") + Self.plain
        }
    }
}
