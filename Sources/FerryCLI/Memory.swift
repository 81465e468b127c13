import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps glibc from holding on to freed upload buffers.
///
/// An upload reads the file in 256 KiB buffers that are allocated on one thread (the body
/// producer) and freed on another (the event loop). glibc raises its mmap threshold after
/// the first such free, so later buffers come from per-thread heaps whose freed tops are
/// only returned above a 512 KiB+ dynamic trim threshold: a 1 GiB PUT peaked at 50–63 MiB
/// RSS against ~30 MiB for a download. A fixed 1 MiB trim threshold brings it to ~40 MiB
/// at no measurable cost. `mallopt` is not in Swift's Glibc module, hence `dlsym`.
enum Memory {
    static func returnFreedMemoryPromptly() {
        #if os(Linux)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let trimThreshold: Int32 = -1  // M_TRIM_THRESHOLD in <malloc.h>
        _ = mallopt(trimThreshold, 1 << 20)
        #endif
    }
}
