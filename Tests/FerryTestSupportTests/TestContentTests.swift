// TestContent: any window equals the same slice of the whole stream.
import Crypto
import FerryTestSupport
import Testing

@Suite("TestContent")
struct TestContentTests {
    @Test func windowsMatchTheWholeStream() {
        let whole = TestContent.bytes(count: 4099, seed: 123)
        for offset in [0, 1, 7, 8, 9, 15, 1000, 4090] {
            for count in [0, 1, 3, 8, 9, 17] where offset + count <= whole.count {
                #expect(TestContent.bytes(offset: offset, count: count, seed: 123) == Array(whole[offset..<offset + count]))
            }
        }
        #expect(TestContent.bytes(count: 64, seed: 1) != TestContent.bytes(count: 64, seed: 2))
        #expect(TestContent.seed(5, version: 0) == 5)
        #expect(TestContent.seed(5, version: 1) != 5)
    }

    @Test func sha256MatchesChunkedAndWhole() {
        let n = (1 << 20) + 12345  // crosses the 1 MiB chunk boundary
        let hex = TestContent.sha256Hex(count: n, seed: 9)
        #expect(hex == Digest.hex(SHA256.hash(data: TestContent.bytes(count: n, seed: 9))))
        #expect(TestContent.sha256Hex(count: 0, seed: 9) == RecordedRequest.emptySHA256)
        #expect(hex != TestContent.sha256Hex(count: n - 1, seed: 9))
    }
}
