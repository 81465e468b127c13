import ByteClubKit
import FerrySystem
import Foundation

/// Ctrl-C while a transfer runs: cancels the Swift task doing it (which cancels the Ferry task)
/// instead of killing the process, so an upload stops cleanly and a download keeps resume data.
enum Interrupt {
    /// Runs `work`; SIGINT cancels it. A second Ctrl-C exits at once.
    static func cancelling<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        // The handler is in place before the work starts: a Ctrl-C is never lost in between.
        let pressed = Presses()
        let handling = Signals.handle([SIGINT]) { _ in pressed.press() }
        defer { handling.stop() }
        let task = Task { try await work() }
        pressed.onPress { task.cancel() }
        return try await task.value
    }
}

/// Ctrl-C presses: the first runs the cancel action (at once, or when it is set), a second exits.
final class Presses: @unchecked Sendable {
    // Guarded by `lock`: the signal source's queue and the caller both touch it.
    private let lock = NSLock()
    private var count = 0
    private var action: (@Sendable () -> Void)?

    func press() {
        let run = lock.withLock { () -> (@Sendable () -> Void)? in
            count += 1
            return count == 1 ? action : nil
        }
        if lock.withLock({ count }) > 1 { exit(130) }
        run?()
    }

    func onPress(_ action: @escaping @Sendable () -> Void) {
        let pressedAlready = lock.withLock { () -> Bool in
            self.action = action
            return count > 0
        }
        if pressedAlready { action() }
    }
}

/// A one-line progress bar on standard error — bytes, rate, ETA — redrawn at most 10 times a second.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let label: String
    private let started = Date()
    private var lastDraw = Date.distantPast
    private var baseline: Int64?
    private let enabled: Bool

    init(_ label: String) {
        self.label = label
        enabled = isatty(STDERR_FILENO) == 1 || ProcessInfo.processInfo.environment["BYTECLUB_PROGRESS"] == "1"
    }

    func update(_ progress: TransferProgress) {
        lock.withLock {
            if baseline == nil { baseline = progress.resumedAt }
            let now = Date()
            let done = progress.expected > 0 && progress.bytes >= progress.expected
            guard enabled, done || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
            lastDraw = now
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + Self.line(label, progress, since: started, baseline: baseline ?? 0, now: now)).utf8))
        }
    }

    func finish() {
        lock.withLock { if enabled && lastDraw != .distantPast { FileHandle.standardError.write(Data("\n".utf8)) } }
    }

    /// `photo.jpg  [#########-----]  12.0 MiB / 20.0 MiB  8.1 MiB/s  ETA 1s`
    static func line(_ label: String, _ progress: TransferProgress, since start: Date, baseline: Int64, now: Date) -> String {
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let rate = Double(progress.bytes - baseline) / elapsed
        var parts = [label]
        if progress.expected > 0 {
            let fraction = min(1, Double(progress.bytes) / Double(progress.expected))
            let width = 24
            let filled = Int(fraction * Double(width))
            parts.append("[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]")
            parts.append("\(Self.bytes(progress.bytes)) / \(Self.bytes(progress.expected))")
        } else {
            parts.append(Self.bytes(progress.bytes))
        }
        parts.append("\(Self.bytes(Int64(rate)))/s")
        if progress.expected > 0, rate > 0 {
            parts.append("ETA \(Int((Double(progress.expected - progress.bytes) / rate).rounded(.up)))s")
        }
        return parts.joined(separator: "  ")
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}

/// Rows printed as columns padded to their widest cell, two spaces apart.
func printColumns(_ rows: [[String]]) {
    for line in columns(rows) { print(line) }
}

/// `text` safe to print: control characters (C0 but newlines when `keepingNewlines`, DEL, C1)
/// become `�`, tabs spaces — names and notes come from other members, and an escape sequence in
/// one must not reach the terminal.
func displaySafe(_ text: String, keepingNewlines: Bool = false) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.map { scalar -> Unicode.Scalar in
        switch scalar.value {
        case 0x0A where keepingNewlines: scalar
        case 0x09: " "
        case 0x00...0x1F, 0x7F...0x9F: "\u{FFFD}"
        default: scalar
        }
    }))
}

/// The lines of `rows` as columns padded to their widest cell (cells made safe to print).
func columns(_ rows: [[String]]) -> [String] {
    let rows = rows.map { $0.map { displaySafe($0) } }
    let widths = rows.reduce(into: [Int]()) { widths, row in
        for (column, cell) in row.enumerated() {
            if column == widths.count { widths.append(0) }
            widths[column] = max(widths[column], cell.count)
        }
    }
    return rows.map { row in
        row.enumerated().map { column, cell in
            column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }
}

/// A listing's date: `2026-11-26 14:05`, local time.
func listingDate(_ date: Date) -> String { listingDates.string(from: date) }

private let listingDates: DateFormatter = {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    return formatter
}()
