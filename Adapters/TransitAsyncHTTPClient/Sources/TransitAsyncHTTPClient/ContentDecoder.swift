import CTransitZlib
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore

/// Decodes one gzip or deflate response body as its chunks arrive, with zlib.
///
/// Pull-based, so that no lock is held while a decoded piece is delivered: ``feed(_:)`` hands it
/// a received chunk, then ``next()`` returns decoded pieces of at most ``pieceSize`` bytes until
/// the chunk is used up. However much a chunk expands, at most one piece is in memory here.
///
/// - `gzip` (and `x-gzip`): one or more gzip members, one after the other.
/// - `deflate`: a zlib stream (RFC 1950, what the standard names) or a raw deflate stream (what
///   some servers send and browsers accept), told apart by the first two bytes.
///
/// Fails with `URLError(.cannotDecodeContentData)` when the bytes are not what the encoding says,
/// when the body ends before the encoded stream does, when bytes follow the end of a deflate
/// stream, when the decoded bytes outgrow `maxRatio` times the encoded ones (a decompression
/// bomb), or, the other way round, when the encoded bytes outgrow twice the decoded ones by more
/// than ``degenerateAllowance`` (thousands of empty gzip members, or headers without content: no
/// real body does that, as deflate never grows data by more than a few percent). Once failed, it
/// stays failed.
///
/// Work and memory are bounded per input byte: each call of ``next()`` makes one output piece
/// and loops over members that decode to nothing without making more, and a member costs zlib
/// a reset, not a new inflater.
///
/// Thread safety: lock-protected; every use of the zlib stream is inside the lock.
final class ContentDecoder: @unchecked Sendable {
    /// The encodings decoded.
    enum Coding: Equatable {
        case gzip
        case deflate
    }

    /// The largest decoded piece ``next()`` returns.
    static let pieceSize = 64 << 10
    /// Bodies are allowed to expand `maxRatio` times at least this many encoded bytes, so a
    /// small body that compresses very well still decodes.
    static let ratioFloor: Int64 = 1024
    /// Encoded bytes allowed beyond twice the decoded ones (gzip headers with long names or
    /// comments, a few empty members) before the body is refused as degenerate.
    static let degenerateAllowance: Int64 = 64 << 10

    private struct State {
        var stream = z_stream()
        var initialised = false
        /// The stream's window bits were chosen (deflate looks at its first two bytes first).
        var started = false
        /// The current stream (gzip member) is complete.
        var atEnd = false
        var failure: URLError?
        /// Received bytes not yet decoded.
        var pending: ByteBuffer?
        /// Encoded bytes received, consumed by zlib, and decoded bytes produced, so far.
        var encodedIn: Int64 = 0
        var encodedConsumed: Int64 = 0
        var decodedOut: Int64 = 0
    }

    let coding: Coding
    private let maxRatio: Int64
    private let url: URL
    private let state = NIOLockedValueBox(State())

    /// A decoder for `coding`; decoded bytes may be at most `maxRatio` times the encoded ones.
    init(coding: Coding, maxRatio: Int, url: URL) {
        self.coding = coding
        self.maxRatio = Int64(max(1, maxRatio))
        self.url = url
    }

    deinit {
        state.withLockedValue { state in
            if state.initialised { inflateEnd(&state.stream) }
        }
    }

    /// The coding a `Content-Encoding` value names: `nil` for none (absent, empty or `identity`),
    /// `.success` for gzip or deflate, `.failure` with the value for anything else (`br`, `zstd`,
    /// two codings applied one after the other, …).
    static func coding(for contentEncoding: String?) -> Result<Coding, UnsupportedCoding>? {
        guard let contentEncoding else { return nil }
        let codings = contentEncoding.split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch codings {
        case []: return nil
        case ["gzip"], ["x-gzip"]: return .success(.gzip)
        case ["deflate"]: return .success(.deflate)
        default: return .failure(UnsupportedCoding(value: contentEncoding))
        }
    }

    /// A `Content-Encoding` this decoder does not decode.
    struct UnsupportedCoding: Error {
        let value: String
    }

    /// Hands over a received chunk; read the decoded pieces with ``next()`` before the next call.
    func feed(_ buffer: ByteBuffer) {
        state.withLockedValue { state in
            state.encodedIn += Int64(buffer.readableBytes)
            if var pending = state.pending, pending.readableBytes > 0 {
                var more = buffer
                pending.writeBuffer(&more)
                state.pending = pending
            } else {
                state.pending = buffer
            }
        }
    }

    /// The next decoded piece of what was fed, or `nil` when all of it is decoded (or held back
    /// until more arrives).
    func next() throws -> Data? {
        try state.withLockedValue { state in
            if let failure = state.failure { throw failure }
            do {
                return try decode(&state)
            } catch let error as URLError {
                state.failure = error
                throw error
            }
        }
    }

    /// The body ended: fails if the encoded stream did not (a truncated body).
    func finish() throws {
        try state.withLockedValue { state in
            if let failure = state.failure { throw failure }
            // No byte at all: an empty body (a HEAD, a 204) is not an encoded stream.
            guard state.encodedIn > 0 else { return }
            guard state.atEnd, (state.pending?.readableBytes ?? 0) == 0 else {
                let error = failure("The body ended before its \(name) stream did (it is truncated)")
                state.failure = error
                throw error
            }
        }
    }

    private var name: String {
        coding == .gzip ? "gzip" : "deflate"
    }

    private func failure(_ message: String) -> URLError {
        URLError(.cannotDecodeContentData, userInfo: [
            NSLocalizedDescriptionKey: "The response body cannot be decoded: \(message).",
            NSURLErrorFailingURLErrorKey: url,
        ])
    }

    /// The next decoded piece, or `nil` when what was fed is used up (or held back until more
    /// arrives). Members and headers that decode to nothing are gone through in a loop, reusing
    /// the one piece this call allocates.
    private func decode(_ state: inout State) throws -> Data? {
        var piece = Data()
        while let pending = state.pending, pending.readableBytes > 0 {
            if piece.isEmpty { piece = Data(count: Self.pieceSize) }
            let (produced, progressed) = try inflateOnce(&state, into: &piece)
            if produced > 0 {
                piece.count = produced
                return piece
            }
            if !progressed { return nil }
        }
        return nil
    }

    /// One `inflate` call into `buffer`: the bytes it produced, and whether it moved at all
    /// (consumed or produced a byte, or ended a member).
    private func inflateOnce(_ state: inout State, into buffer: inout Data) throws -> (produced: Int, progressed: Bool) {
        guard var pending = state.pending else { return (0, false) }
        if !state.started {
            guard let bits = windowBits(pending) else { return (0, false) }
            let status = CTransitZlib_inflateInit2(&state.stream, bits)
            guard status == Z_OK else { throw failure("zlib could not start (\(status))") }
            state.initialised = true
            state.started = true
        } else if state.atEnd {
            // Bytes after the end of the stream: another gzip member, or junk after a deflate stream.
            guard coding == .gzip else { throw failure("bytes follow the end of the deflate stream") }
            guard inflateReset(&state.stream) == Z_OK else { throw failure("zlib could not start the next gzip member") }
            state.atEnd = false
        }
        var produced = 0
        var status: Int32 = Z_OK
        var consumed = 0
        buffer.withUnsafeMutableBytes { output in
            pending.withUnsafeReadableBytes { input in
                // zlib never writes through `next_in`.
                state.stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
                state.stream.avail_in = uInt(input.count)
                state.stream.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
                state.stream.avail_out = uInt(output.count)
                status = inflate(&state.stream, Z_NO_FLUSH)
                consumed = input.count - Int(state.stream.avail_in)
                produced = output.count - Int(state.stream.avail_out)
                state.stream.next_in = nil
                state.stream.next_out = nil
                state.stream.avail_in = 0
            }
        }
        pending.moveReaderIndex(forwardBy: consumed)
        state.pending = pending.readableBytes > 0 ? pending : nil
        switch status {
        case Z_OK:
            break
        case Z_STREAM_END:
            state.atEnd = true
        case Z_BUF_ERROR where produced == 0 && consumed == 0:
            // Nothing to do with what there is: wait for more input.
            return (0, false)
        case Z_NEED_DICT:
            throw failure("the \(name) stream needs a preset dictionary")
        default:
            throw failure("the bytes are not a valid \(name) stream (zlib error \(status))")
        }
        state.decodedOut += Int64(produced)
        state.encodedConsumed += Int64(consumed)
        let allowed = maxRatio * max(state.encodedIn, Self.ratioFloor)
        if state.decodedOut > allowed {
            throw failure("it expands more than \(maxRatio) times (a decompression bomb?)")
        }
        if state.encodedConsumed > 2 * state.decodedOut + Self.degenerateAllowance {
            throw failure(
                "\(state.encodedConsumed) encoded bytes decode to only \(state.decodedOut) (empty \(name) members or oversized headers?)"
            )
        }
        return (produced, consumed > 0 || produced > 0 || status == Z_STREAM_END)
    }

    /// zlib's window bits for the stream starting with `bytes`: gzip only for gzip; for
    /// deflate, a zlib stream if its two-byte header says so, raw deflate otherwise. `nil` until
    /// two bytes arrived for deflate.
    private func windowBits(_ bytes: ByteBuffer) -> Int32? {
        switch coding {
        case .gzip:
            return 15 + 16
        case .deflate:
            guard bytes.readableBytes >= 2,
                  let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self),
                  let second = bytes.getInteger(at: bytes.readerIndex + 1, as: UInt8.self)
            else { return nil }
            let isZlib = first & 0x0F == 8 && first >> 4 <= 7 && (UInt16(first) << 8 | UInt16(second)) % 31 == 0
            return isZlib ? 15 : -15
        }
    }
}
