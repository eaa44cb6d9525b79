import Foundation
import NIOCore
import Testing
@testable import TransitAsyncHTTPClient

/// How a body chunk becomes `Data`: the same bytes whether the buffer's storage is shared or
/// copied, and a small slice of a large buffer is copied so that it does not keep the rest alive.
@Suite("Body chunks")
struct BodyChunkTests {
    private func buffer(_ bytes: [UInt8], capacity: Int) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: capacity)
        buffer.writeBytes(bytes)
        return buffer
    }

    /// Whether `data` reads the same memory as `buffer`'s readable bytes.
    private func shares(_ data: Data, _ buffer: ByteBuffer) -> Bool {
        let dataAddress = data.withUnsafeBytes { $0.baseAddress }
        let bufferAddress = buffer.withUnsafeReadableBytes { $0.baseAddress }
        return dataAddress == bufferAddress
    }

    @Test func aChunkThatFillsItsBufferIsSharedNotCopied() {
        let bytes = (0..<13_896).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let chunk = buffer(bytes, capacity: bytes.count)
        let data = ExchangeDelegate.data(chunk)
        #expect(data == Data(bytes))
        #expect(shares(data, chunk))
    }

    @Test func aSliceIsItsOwnBytesOnly() {
        let bytes = (0..<4_096).map { UInt8(truncatingIfNeeded: $0) }
        var whole = buffer(bytes, capacity: bytes.count)
        whole.moveReaderIndex(forwardBy: 1_000)
        #expect(ExchangeDelegate.data(whole) == Data(bytes[1_000...]))
        let slice = whole.getSlice(at: whole.readerIndex + 10, length: 100)!
        #expect(ExchangeDelegate.data(slice) == Data(bytes[1_010..<1_110]))
    }

    @Test func aSmallChunkOfALargeBufferIsCopied() {
        let small = buffer([1, 2, 3], capacity: 65_536)
        let data = ExchangeDelegate.data(small)
        #expect(data == Data([1, 2, 3]))
        // A copy: it does not keep the 64 KiB buffer alive.
        #expect(!shares(data, small))
    }
}
