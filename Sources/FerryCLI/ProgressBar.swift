import Foundation

/// A progress display on standard error: a redrawn bar on a terminal (at most ten
/// redraws a second), plain lines elsewhere (at most one a second).
///
///     photo.jpg [=========>          ]  48%  12.0 MiB / 25.0 MiB  41.3 MiB/s  ETA 0:01
final class ProgressBar: @unchecked Sendable {  // state behind `lock`
    /// What `update` counts: bytes, or whole files (`ferry get --many`).
    enum Unit { case bytes, files }

    private let label: String
    private let unit: Unit
    private let enabled: Bool
    private let terminal: Bool
    private let lock = NSLock()
    private let started = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private var samples: [(ContinuousClock.Instant, Int64)] = []
    private var base: Int64 = 0
    private var drewLine = false
    private var finished = false

    init(label: String, enabled: Bool, counting unit: Unit = .bytes, terminal: Bool = Console.stderrIsTerminal) {
        self.label = label.count > 24 ? String(label.prefix(23)) + "…" : label
        self.unit = unit
        self.enabled = enabled
        self.terminal = terminal
    }

    /// Bytes already there before this run (a resumed download): not counted in the rate.
    func setBase(_ bytes: Int64) {
        lock.withLock {
            base = bytes
            samples = []
        }
    }

    func update(done: Int64, total: Int64, force: Bool = false) {
        guard enabled else { return }
        let line: String? = lock.withLock {
            guard !finished else { return nil }
            let now = ContinuousClock.now
            samples.append((now, done))
            while samples.count > 2, now - samples[0].0 > .seconds(3) { samples.removeFirst() }
            let interval: Duration = terminal ? .milliseconds(100) : .seconds(1)
            if !force, let lastDraw, now - lastDraw < interval { return nil }
            lastDraw = now
            return render(done: done, total: total, now: now)
        }
        if let line { draw(line) }
    }

    /// The last line, then a line break.
    func finish(done: Int64, total: Int64) {
        guard enabled else { return }
        let line: String? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            let now = ContinuousClock.now
            let seconds = Self.seconds(now - started)
            let rate = seconds > 0 ? Double(done - base) / seconds : 0
            // Under ten seconds the clock (whole seconds, rounded up) would say 0:01 for 0.1 s.
            let took = seconds < 10 ? String(format: "%.2f s", seconds) : Self.clock(seconds)
            return "\(label)  \(Self.bytes(done))  \(Self.bytes(Int64(rate)))/s  in \(took)"
        }
        if let line {
            draw(line)
            if terminal { Console.write(2, "\n") }
        }
    }

    /// Stops drawing and leaves the cursor on a fresh line (before an error message).
    func stop() {
        lock.withLock {
            if terminal && drewLine { Console.write(2, "\n") }
            drewLine = false
            finished = true
        }
    }

    /// A note that must not be overwritten by the bar.
    func note(_ text: String) {
        lock.withLock {
            if terminal && drewLine { Console.write(2, "\r\u{1B}[K") }
            drewLine = false
        }
        Console.error(text)
    }

    private func draw(_ line: String) {
        lock.withLock {
            if terminal {
                Console.write(2, "\r\u{1B}[K" + line)
                drewLine = true
            } else {
                Console.write(2, line + "\n")
            }
        }
    }

    /// Called with the lock held.
    private func render(done: Int64, total: Int64, now: ContinuousClock.Instant) -> String {
        var rate = 0.0
        if let first = samples.first, samples.count >= 2 {
            let span = Self.seconds(now - first.0)
            if span > 0.05 { rate = Double(done - first.1) / span }
        }
        if rate == 0 {
            let span = Self.seconds(now - started)
            if span > 0.05 { rate = Double(done - base) / span }
        }
        var parts = [label]
        if total > 0 {
            let fraction = min(1, max(0, Double(done) / Double(total)))
            if terminal { parts.append(Self.bar(fraction, width: 20)) }
            parts.append(String(format: "%3d%%", Int(fraction * 100)))
            parts.append("\(amount(done)) / \(amount(total))")
        } else {
            parts.append(amount(done))
        }
        parts.append(unit == .bytes ? "\(Self.bytes(Int64(rate)))/s" : "\(Int64(rate)) files/s")
        if total > 0, rate > 0, done < total {
            parts.append("ETA " + Self.clock(Double(total - done) / rate))
        }
        return parts.joined(separator: "  ")
    }

    private func amount(_ count: Int64) -> String {
        unit == .bytes ? Self.bytes(count) : "\(count)"
    }

    static func bar(_ fraction: Double, width: Int) -> String {
        let filled = Int((fraction * Double(width)).rounded(.down))
        if filled >= width { return "[" + String(repeating: "=", count: width) + "]" }
        return "[" + String(repeating: "=", count: filled) + ">" + String(repeating: " ", count: width - filled - 1) + "]"
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(max(0, count))
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let total = Int(seconds.rounded(.up))
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (s, atto) = duration.components
        return Double(s) + Double(atto) / 1e18
    }
}
