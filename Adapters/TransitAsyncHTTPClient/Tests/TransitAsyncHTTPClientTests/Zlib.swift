import CTransitZlib
import Foundation

/// Compressed fixtures made at test time with the system's zlib.
enum Zlib {
    enum Format {
        /// RFC 1952 (`Content-Encoding: gzip`).
        case gzip
        /// RFC 1950, what `Content-Encoding: deflate` names.
        case zlib
        /// A bare deflate stream, which some servers send as `deflate`.
        case raw

        var windowBits: Int32 {
            switch self {
            case .gzip: 15 + 16
            case .zlib: 15
            case .raw: -15
            }
        }
    }

    /// `data` compressed in `format`.
    static func compress(_ data: Data, _ format: Format) -> Data {
        var stream = z_stream()
        precondition(CTransitZlib_deflateInit2(&stream, Z_BEST_COMPRESSION, format.windowBits) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 64)
        let produced = input.withUnsafeMutableBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                stream.next_in = input.baseAddress
                stream.avail_in = uInt(input.count)
                stream.next_out = output.baseAddress
                stream.avail_out = uInt(output.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return output.count - Int(stream.avail_out)
            }
        }
        return Data(output[..<produced])
    }

    /// Text that compresses as real bodies do (not as well as zeros).
    static func sampleText(bytes: Int) -> Data {
        var text = ""
        var index = 0
        while text.utf8.count < bytes {
            text += "{\"id\":\(index),\"title\":\"Post number \(index * 7919 % 1000)\",\"body\":\"\(String(index * 104_729, radix: 36))\"},"
            index += 1
        }
        return Data(text.utf8.prefix(bytes))
    }
}
