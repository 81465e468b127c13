import FerryCore
import Foundation
import Synchronization
import Testing

/// How many frames are below the caller: a callback that was re-wrapped at each access is
/// called through one more pair of thunks every time, each a frame.
func stackDepth() -> Int {
    Thread.callStackReturnAddresses.count
}

@Suite("SharedCallback")
struct SharedCallbackTests {
    @Test("calls the callback set, none after it is cleared, and says whether one is set")
    func setCallClear() {
        let callback = SharedCallback<Int>()
        let heard = Mutex<[Int]>([])
        #expect(!callback.isSet)
        #expect(!callback.call(1))
        callback.set { value in heard.withLock { $0.append(value) } }
        #expect(callback.isSet)
        #expect(callback.call(2))
        callback.set { value in heard.withLock { $0.append(value * 10) } }
        #expect(callback.call(3))
        callback.set(nil)
        #expect(!callback.call(4))
        #expect(heard.withLock { $0 } == [2, 30])
    }

    @Test("the thousandth call goes through as many frames as the first (a closure held as a lock's value gains two per access)")
    func callDepthStaysPut() {
        let callback = SharedCallback<Int>()
        let depths = Mutex<[Int]>([])
        callback.set { _ in
            let depth = stackDepth()
            depths.withLock { $0.append(depth) }
        }
        for index in 0..<1_000 {
            _ = callback.isSet
            callback.call(index)
        }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 1_000)
        #expect(seen.first == seen.last, "call depth went from \(seen.first ?? 0) to \(seen.last ?? 0) frames")
    }
}
