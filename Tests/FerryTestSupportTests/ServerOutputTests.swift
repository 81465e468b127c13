import FerryTestSupport
import Testing

@Suite("ServerOutput")
struct ServerOutputTests {
    @Test func thePortOfAWholeListeningLine() {
        #expect(ServerOutput.listeningPort(in: "starting\nlistening on http://127.0.0.1:40123\nready\n") == 40123)
        #expect(ServerOutput.listeningPort(in: "listening on http://127.0.0.1:401") == nil, "a line still being written")
        #expect(ServerOutput.listeningPort(in: "listening on http://127.0.0.1:\n") == nil)
        #expect(ServerOutput.listeningPort(in: "") == nil)
    }
}
