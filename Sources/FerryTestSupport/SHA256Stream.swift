// Incremental SHA-256 over raw buffers, shared by the servers.
import Crypto

/// Incremental SHA-256 that ends in a lower-case hex string.
struct SHA256Stream {
    private var hasher = SHA256()

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    func finalizeHex() -> String {
        TestContent.hex(hasher.finalize())
    }
}
