/// The compose sheet's text and where the cursor stands in it (a count of characters before
/// it), with the edits a key makes. A value: the sheet keeps one and hands its text to the
/// controller after each key.
///
/// ```swift
/// var editing = EditedText("Highland Cw")
/// editing.moveLeft()
/// editing.insert("o")   // "Highland Cow", the cursor before "w"
/// ```
struct EditedText: Equatable, Sendable {
    private(set) var text: String
    /// Characters before the cursor: 0 ... text.count.
    private(set) var cursor: Int

    /// `text` with the cursor at its end.
    init(_ text: String = "") {
        self.text = text
        self.cursor = text.count
    }

    private var cursorIndex: String.Index { text.index(text.startIndex, offsetBy: cursor) }

    /// Typed text goes in at the cursor, which stays after it. Counted from the end: typed
    /// text that starts with a combining mark joins the character before it, so the text may
    /// grow by fewer characters than were typed.
    mutating func insert(_ typed: String) {
        let after = text.count - cursor
        text.insert(contentsOf: typed, at: cursorIndex)
        cursor = max(0, text.count - after)
    }

    /// Backspace: the character before the cursor.
    mutating func deleteBackward() {
        guard cursor > 0 else { return }
        cursor -= 1
        text.remove(at: cursorIndex)
    }

    /// Delete: the character under the cursor.
    mutating func deleteForward() {
        guard cursor < text.count else { return }
        text.remove(at: cursorIndex)
    }

    mutating func moveLeft() { cursor = max(0, cursor - 1) }
    mutating func moveRight() { cursor = min(text.count, cursor + 1) }
    mutating func moveToStart() { cursor = 0 }
    mutating func moveToEnd() { cursor = text.count }

    mutating func clear() { self = EditedText() }
}
