import FerrySystem
import Foundation

/// Turns Ctrl-C (SIGINT) and SIGTERM into a call, so a transfer can stop cleanly and leave
/// what `--continue` needs. A second signal exits at once.
final class Interrupts: @unchecked Sendable {  // `count` behind `lock`
    private let lock = NSLock()
    private var count = 0
    private var handling: Signals.Handling?

    var happened: Bool { lock.withLock { count > 0 } }

    init(_ onInterrupt: @escaping @Sendable () -> Void) {
        handling = Signals.handle([SIGINT, SIGTERM]) { [self] _ in
            let seen = lock.withLock { () -> Int in
                count += 1
                return count
            }
            if seen > 1 { Foundation.exit(ExitStatus.interrupted) }
            onInterrupt()
        }
    }

    /// Restores the default handlers.
    func remove() {
        handling?.stop()
    }
}
