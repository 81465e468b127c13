import Dispatch
import Foundation

/// Turns Ctrl-C (SIGINT) and SIGTERM into a call, so a transfer can stop cleanly and leave
/// what `--continue` needs. A second signal exits at once.
final class Interrupts: @unchecked Sendable {  // `count` behind `lock`
    private let lock = NSLock()
    private var count = 0
    private var sources: [any DispatchSourceSignal] = []

    var happened: Bool { lock.withLock { count > 0 } }

    init(_ onInterrupt: @escaping @Sendable () -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let seen = lock.withLock { () -> Int in
                    count += 1
                    return count
                }
                if seen > 1 { Foundation.exit(ExitStatus.interrupted) }
                onInterrupt()
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Restores the default handlers.
    func remove() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
