import ByteClubKit
import Foundation

/// What the full-screen app shows and what a key does, as a value: each event gives the next
/// state and the work to start (``ClubScreen/Effect``). Drawing is ``ScreenRenderer``'s; running
/// the work is ``ScreenApp``'s.
struct ClubScreen {
    /// The tab bar, as in the tutorial's app.
    enum Tab: Int, CaseIterable {
        case notes, photos
        var title: String { self == .notes ? "Notes" : "Photos" }
    }

    /// A question asked on the bottom line.
    enum Question: Equatable {
        case newNoteName
        case photoFile
        var prompt: String { self == .newNoteName ? "New note's name: " : "Photo to upload (path): " }
    }

    enum Mode: Equatable {
        case browsing
        /// A note open for reading.
        case reading(name: String, text: String, top: Int)
        /// A photo's details and thumbnail.
        case viewing(Photo)
        case asking(Question, answer: String)
    }

    /// A photo upload in progress.
    struct Upload: Equatable {
        var name: String
        var progress: TransferProgress
        var started: Date
    }

    /// Work for the app to start.
    enum Effect: Equatable {
        case reload
        case open(note: String)
        case write(note: String)
        case edit(note: String)
        case upload(path: String)
        case cancelUpload
        case quit
        /// Thumbnails of photos that came into view, as the tutorial's table fetched them.
        case fetchThumbnails([Photo])
    }

    var tab = Tab.notes
    var notes: [Note] = []
    var photos: [Photo] = []
    var selected: [Tab: Int] = [.notes: 0, .photos: 0]
    var mode = Mode.browsing
    var upload: Upload?
    /// The last thing said to the member (an outcome, an error).
    var status = "Loading…"
    var loaded = false
    /// Cached thumbnails by ``thumbnailKey(_:)``, and those already asked for.
    var thumbnails: [String: URL] = [:]
    private var requested: Set<String> = []

    static func thumbnailKey(_ photo: Photo) -> String { photo.metadata.path.lowercased() + "@" + (photo.metadata.rev ?? "") }

    /// The rows of the list that fit `height` lines, around the selection (the renderer draws these).
    func visibleRows(height: Int) -> Range<Int> {
        let visible = max(height - 5, 1)
        let top = max(0, min(selection - visible / 2, rowCount - visible))
        return top..<min(rowCount, top + visible)
    }

    /// The photos in view whose thumbnails were never asked for; marks them asked.
    mutating func thumbnailsToFetch(height: Int) -> [Effect] {
        guard tab == .photos, case .browsing = mode else { return [] }
        let wanted = visibleRows(height: height).map { photos[$0] }.filter { !requested.contains(Self.thumbnailKey($0)) }
        guard !wanted.isEmpty else { return [] }
        for photo in wanted { requested.insert(Self.thumbnailKey(photo)) }
        return [.fetchThumbnails(wanted)]
    }

    var rowCount: Int { tab == .notes ? notes.count : photos.count }
    var selection: Int { min(selected[tab] ?? 0, max(rowCount - 1, 0)) }

    // MARK: Transitions

    mutating func press(_ key: Key) -> [Effect] {
        switch mode {
        case .asking(let question, let answer): return answering(question, answer, key)
        case .reading(let name, let text, let top): return reading(name, text, top, key)
        case .viewing:
            if key == .interrupt { return [.quit] }
            if [.escape, .character("q"), .left, .enter].contains(key) { mode = .browsing }
            return []
        case .browsing: return browsing(key)
        }
    }

    private mutating func browsing(_ key: Key) -> [Effect] {
        switch key {
        case .up: selected[tab] = max(selection - 1, 0)
        case .down: selected[tab] = min(selection + 1, max(rowCount - 1, 0))
        case .left, .right, .tab: tab = tab == .notes ? .photos : .notes
        case .enter:
            if tab == .notes, notes.indices.contains(selection) { return [.open(note: notes[selection].name)] }
            if tab == .photos, photos.indices.contains(selection) { mode = .viewing(photos[selection]) }
        case .character("n"):
            mode = .asking(.newNoteName, answer: "")
        case .character("e"):
            if tab == .notes, notes.indices.contains(selection) { return [.edit(note: notes[selection].name)] }
            status = "Choose a note to edit in the Notes tab"
        case .character("u"):
            guard upload == nil else {
                status = "An upload is running: c cancels it"
                return []
            }
            mode = .asking(.photoFile, answer: "")
        case .character("c"):
            if upload != nil { return [.cancelUpload] }
        case .character("r"):
            status = "Refreshing…"
            return [.reload]
        case .character("q"), .interrupt:
            return [.quit]
        default: break
        }
        return []
    }

    private mutating func reading(_ name: String, _ text: String, _ top: Int, _ key: Key) -> [Effect] {
        switch key {
        case .escape, .character("q"), .left: mode = .browsing
        case .up: mode = .reading(name: name, text: text, top: max(top - 1, 0))
        case .down: mode = .reading(name: name, text: text, top: top + 1)
        case .character("e"):
            mode = .browsing
            return [.edit(note: name)]
        case .interrupt: return [.quit]
        default: break
        }
        return []
    }

    private mutating func answering(_ question: Question, _ answer: String, _ key: Key) -> [Effect] {
        switch key {
        case .escape, .interrupt:
            mode = .browsing
            status = "Cancelled"
        case .backspace:
            mode = .asking(question, answer: String(answer.dropLast()))
        case .character(let character):
            mode = .asking(question, answer: answer + String(character))
        case .enter:
            mode = .browsing
            let answer = answer.trimmingCharacters(in: .whitespaces)
            guard !answer.isEmpty else { return [] }
            return question == .newNoteName ? [.write(note: answer)] : [.upload(path: answer)]
        default: break
        }
        return []
    }

    /// New lists from the service; the selection stays on the same name when it is still there.
    mutating func show(notes: [Note], photos: [Photo]) {
        let selectedNote = self.notes.indices.contains(selected[.notes] ?? 0) ? self.notes[selected[.notes] ?? 0].name : nil
        let selectedPhoto = self.photos.indices.contains(selected[.photos] ?? 0) ? self.photos[selected[.photos] ?? 0].name : nil
        self.notes = notes
        self.photos = photos
        if let name = selectedNote, let index = notes.firstIndex(where: { $0.name == name }) { selected[.notes] = index }
        if let name = selectedPhoto, let index = photos.firstIndex(where: { $0.name == name }) { selected[.photos] = index }
        if !loaded || status == "Refreshing…" { status = "\(notes.count) note(s), \(photos.count) photo(s)" }
        loaded = true
    }
}

/// A key as the screen understands it.
enum Key: Equatable {
    case up, down, left, right, enter, tab, backspace, escape
    /// Ctrl-C: the terminal is in raw mode, so it arrives as a key.
    case interrupt
    case character(Character)

    /// The keys in `bytes` (what one read gave), with the rest of an unfinished UTF-8 or escape
    /// sequence left in `bytes` for the next read.
    static func parse(_ bytes: inout [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x1B:
                guard index + 1 < bytes.count else {
                    keys.append(.escape)  // a lone Escape: nothing followed it in the same read
                    index += 1
                    continue
                }
                if bytes[index + 1] == UInt8(ascii: "["), index + 2 < bytes.count {
                    let arrows: [UInt8: Key] = [UInt8(ascii: "A"): .up, UInt8(ascii: "B"): .down, UInt8(ascii: "C"): .right, UInt8(ascii: "D"): .left]
                    if let arrow = arrows[bytes[index + 2]] { keys.append(arrow) }
                    // Skip the rest of a longer sequence (`ESC [ 1 ; 5 C`) up to its final byte.
                    var end = index + 2
                    while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
                    index = end + 1
                } else {
                    keys.append(.escape)
                    index += 1
                }
            case 0x0D, 0x0A: keys.append(.enter); index += 1
            case 0x09: keys.append(.tab); index += 1
            case 0x7F, 0x08: keys.append(.backspace); index += 1
            case 0x03: keys.append(.interrupt); index += 1
            case 0x00..<0x20: index += 1
            default:
                let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                guard index + length <= bytes.count else {
                    bytes = Array(bytes[index...])
                    return keys
                }
                if let text = String(bytes: bytes[index..<(index + length)], encoding: .utf8), let character = text.first {
                    keys.append(.character(character))
                }
                index += length
            }
        }
        bytes = []
        return keys
    }
}
