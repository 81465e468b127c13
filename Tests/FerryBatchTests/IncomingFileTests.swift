// How a batch's file gets its name: each way, including the fallbacks this machine never
// needs (no linkat by descriptor, no /proc, no O_TMPFILE), on a real folder.
@testable import FerryBatch
import FerryTestSupport
import Foundation
import NIOCore
import Testing

@Suite struct IncomingFileTests {
    static let namings: [IncomingFile.Naming] = [.automatic, .throughProc, .byCopy, .renamed]

    @Test(arguments: namings)
    func aWholeFileGetsItsNameAndReplacesTheOldOne(naming: IncomingFile.Naming) throws {
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("photo.jpg").path
        for (round, size) in [100_000, 70_000].enumerated() {  // the second replaces the first
            let file = try IncomingFile(destination: destination, naming: naming)
            let bytes = TestContent.bytes(count: size, seed: UInt64(round))
            for start in stride(from: 0, to: size, by: 16_384) {
                try file.write(ByteBuffer(bytes: bytes[start..<min(size, start + 16_384)]))
            }
            #expect(!FileManager.default.fileExists(atPath: destination) || round == 1, "no name before commit")
            try file.commit()
            #expect(try TestFiles.sha256Hex(ofFile: URL(fileURLWithPath: destination)) == TestContent.sha256Hex(count: size, seed: UInt64(round)))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["photo.jpg"], "no temporary file left")
    }

    @Test(arguments: namings)
    func aDiscardedFileLeavesNothing(naming: IncomingFile.Naming) throws {
        let folder = try TestFiles.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try IncomingFile(destination: folder.appendingPathComponent("half.bin").path, naming: naming)
        try file.write(ByteBuffer(bytes: TestContent.bytes(count: 5000, seed: 1)))
        file.discard()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
