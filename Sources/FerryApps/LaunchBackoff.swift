import FerryCore
public import Foundation

/// When the next launch of an app may happen, so a launch command that fails or never
/// connects is retried with backoff, not in a loop. A pure value: the daemon keeps one per
/// app and its tests advance time instead of sleeping.
///
/// The first launch may happen at once. After the n-th launch in a row without the app
/// connecting, the next one waits `base × 2^(n-1)`, at most `cap`:
///
/// | launches so far | wait after the last one (defaults) |
/// |---|---|
/// | 0 | none |
/// | 1 | 1 s |
/// | 2 | 2 s |
/// | 3 | 4 s |
/// | 9 | 256 s |
/// | 10 and more | 300 s (the cap) |
///
/// ```swift
/// var backoff = LaunchBackoff()
/// if backoff.nextAllowedLaunch().map({ $0 <= now }) ?? true {
///     _ = try launcher.launch(app, session: "com.example.app.bg")
///     backoff.recordLaunch(at: now)
/// }
/// // … later, when the app attaches:
/// backoff.recordConnected()
/// ```
public struct LaunchBackoff: Sendable, Equatable {
    /// The wait after the first launch.
    public var base: Duration
    /// The longest wait.
    public var cap: Duration
    /// Launches since the app last connected.
    public private(set) var launchesWithoutConnecting: Int = 0
    /// When the last of those launches happened.
    public private(set) var lastLaunch: Date?

    public init(base: Duration = .seconds(1), cap: Duration = .seconds(300)) {
        self.base = base
        self.cap = cap
    }

    /// A launch happened at `date` (whether or not it succeeded: a failing command backs off too).
    public mutating func recordLaunch(at date: Date) {
        launchesWithoutConnecting += 1
        lastLaunch = date
    }

    /// The app connected: the next launch may happen at once.
    public mutating func recordConnected() {
        launchesWithoutConnecting = 0
        lastLaunch = nil
    }

    /// The wait after the last launch: zero before any launch.
    public var currentDelay: Duration {
        guard launchesWithoutConnecting > 0 else { return .zero }
        // 2^(n-1) overflows nothing: past 40 doublings any base has passed any sane cap.
        let doublings = min(launchesWithoutConnecting - 1, 40)
        let delay = base * (1 << doublings)
        return min(delay, cap)
    }

    /// The earliest time of the next launch, or nil when one may happen now (none yet, or
    /// the app connected since).
    public func nextAllowedLaunch() -> Date? {
        guard let lastLaunch else { return nil }
        return lastLaunch.addingTimeInterval(currentDelay.timeInterval)
    }
}

