@testable import FerryEngine
import Foundation
import Testing

/// What the engine remembers of each upload URL's resumable-upload support, one probe per
/// URL: for as long as the engine lives (ferryd's, weeks), so it must stay bounded.
@Suite("Resumable-upload support cache")
struct ResumableSupportCacheTests {
    @Test("a URL's answer (support or none) is kept; past its capacity it starts again, never holding more")
    func bounded() throws {
        let cache = ResumableSupportCache()
        let first = try #require(URL(string: "http://127.0.0.1:1/upload/0"))
        let support = ResumableSupportCache.Support(version: try #require(ResumableUploadVersion(rawValue: 8)), limits: UploadLimits())
        cache.store(support, for: first)
        #expect(cache.lookup(first) == .some(.some(support)))
        let none = try #require(URL(string: "http://127.0.0.1:1/upload/none"))
        cache.store(nil, for: none)
        #expect(cache.lookup(none) == .some(.none), "no support is an answer too")
        #expect(cache.lookup(try #require(URL(string: "http://127.0.0.1:1/upload/never"))) == .none, "not asked yet")

        var most = cache.count
        for number in 1...(3 * ResumableSupportCache.capacity) {
            cache.store(nil, for: try #require(URL(string: "http://127.0.0.1:1/upload/presigned-\(number)")))
            most = max(most, cache.count)
        }
        #expect(most == ResumableSupportCache.capacity)
        // Storing again a URL it knows never empties it.
        let known = try #require(URL(string: "http://127.0.0.1:1/upload/presigned-\(3 * ResumableSupportCache.capacity)"))
        let before = cache.count
        cache.store(support, for: known)
        #expect(cache.count == before && cache.lookup(known) == .some(.some(support)))
    }
}
