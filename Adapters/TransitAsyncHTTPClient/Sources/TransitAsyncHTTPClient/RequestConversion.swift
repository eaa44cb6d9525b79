import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import Transit

/// `TransportRequest` → AsyncHTTPClient's request: the URL, method and headers as they are, the
/// body from `httpBody` or streamed from the body file. A handful of copies, no parsing beyond
/// AsyncHTTPClient's own URL check.
enum RequestConversion {
    /// How much of a body file is read at a time.
    static let fileChunkSize = 128 << 10

    static func request(from request: TransportRequest, eventLoopGroup: any EventLoopGroup) throws -> AsyncHTTPClient.HTTPClient.Request {
        guard let url = request.url else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request has no URL."])
        }
        switch url.scheme {
        case "http"?, "https"?:
            break
        case let scheme?:
            switch scheme.lowercased() {
            case "http", "https": break
            default: throw unsupported(url, "AsyncHTTPClientTransport sends http and https requests only")
            }
        case nil:
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request's URL has no scheme.", NSURLErrorFailingURLErrorKey: url])
        }
        // The fields in their order, a repeated field as many times as it was given.
        var headers = HTTPHeaders()
        if !request.headerFields.isEmpty {
            headers.reserveCapacity(request.headerFields.count + 1)  // and the Accept-Encoding the adapter may add
            for field in request.headerFields {
                headers.add(name: field.name, value: field.value)
            }
        }
        let body: AsyncHTTPClient.HTTPClient.Body?
        if let file = request.bodyFile {
            body = try fileBody(file, eventLoopGroup: eventLoopGroup)
        } else if let data = request.body {
            body = .bytes(data)
        } else if request.bodyStream != nil {
            throw unsupported(url, "A request body from httpBodyStream is not supported; give the body as httpBody or as a body file")
        } else {
            body = nil
        }
        let method: NIOHTTP1.HTTPMethod = request.method == .get ? .GET : NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        return try AsyncHTTPClient.HTTPClient.Request(url: url, method: method, headers: headers, body: body)
    }

    /// The URL goes in `NSURLErrorFailingURLErrorKey` only, never in the message (it may carry
    /// credentials).
    private static func unsupported(_ url: URL, _ message: String) -> URLError {
        URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: message + ".", NSURLErrorFailingURLErrorKey: url])
    }

    /// A body streamed from `file`: its size is announced as `Content-Length`, and it is read in
    /// ``fileChunkSize`` pieces on NIO's shared thread pool, each read after the previous piece
    /// was written, so the file is never in memory.
    static func fileBody(_ file: URL, eventLoopGroup: any EventLoopGroup) throws -> AsyncHTTPClient.HTTPClient.Body {
        let path = file.path
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw URLError(errno == ENOENT ? .fileDoesNotExist : .cannotOpenFile, userInfo: [
                NSLocalizedDescriptionKey: "The body file \(path) cannot be read (errno \(errno)).",
                NSURLErrorFailingURLErrorKey: file,
            ])
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw URLError(.cannotOpenFile, userInfo: [NSLocalizedDescriptionKey: "The body file \(path) is not a regular file."])
        }
        let size = Int64(info.st_size)
        return .stream(contentLength: size) { writer in
            let loop = eventLoopGroup.any()
            let pool = NIOThreadPool.singleton
            return pool.runIfActive(eventLoop: loop) { try BodyFile(path: path) }.flatMap { body in
                pump(body, remaining: size, writer: writer, loop: loop, pool: pool).always { _ in body.close() }
            }
        }
    }

    /// Reads and writes the rest of `body`, one piece at a time.
    private static func pump(
        _ body: BodyFile,
        remaining: Int64,
        writer: AsyncHTTPClient.HTTPClient.Body.StreamWriter,
        loop: any EventLoop,
        pool: NIOThreadPool
    ) -> EventLoopFuture<Void> {
        guard remaining > 0 else { return loop.makeSucceededVoidFuture() }
        let count = Int(min(remaining, Int64(fileChunkSize)))
        return pool.runIfActive(eventLoop: loop) { try body.read(upTo: count) }.flatMap { buffer in
            guard buffer.readableBytes > 0 else {
                return loop.makeFailedFuture(URLError(.cannotOpenFile, userInfo: [
                    NSLocalizedDescriptionKey: "The body file \(body.path) became shorter while it was being sent.",
                ]))
            }
            let sent = Int64(buffer.readableBytes)
            return writer.write(.byteBuffer(buffer)).flatMap {
                pump(body, remaining: remaining - sent, writer: writer, loop: loop, pool: pool)
            }
        }
    }
}

/// An open body file. Reads run on the thread pool, one at a time; `close` runs once, after the
/// last.
struct BodyFile: Sendable {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            throw URLError(errno == ENOENT ? .fileDoesNotExist : .cannotOpenFile, userInfo: [
                NSLocalizedDescriptionKey: "The body file \(path) cannot be opened (errno \(errno)).",
            ])
        }
        descriptor = fd
    }

    func read(upTo count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var failure: Int32 = 0
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            while true {
                let read = systemRead(descriptor, raw.baseAddress, count)
                if read >= 0 { return read }
                if errno == EINTR { continue }
                failure = errno
                return 0
            }
        }
        if failure != 0 {
            throw URLError(.cannotOpenFile, userInfo: [NSLocalizedDescriptionKey: "Reading the body file \(path) failed (errno \(failure))."])
        }
        return buffer
    }

    func close() {
        _ = systemClose(descriptor)
    }
}

#if canImport(Glibc)
private func systemRead(_ fd: Int32, _ pointer: UnsafeMutableRawPointer?, _ count: Int) -> Int { Glibc.read(fd, pointer, count) }
private func systemClose(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Musl)
private func systemRead(_ fd: Int32, _ pointer: UnsafeMutableRawPointer?, _ count: Int) -> Int { Musl.read(fd, pointer, count) }
private func systemClose(_ fd: Int32) -> Int32 { Musl.close(fd) }
#else
private func systemRead(_ fd: Int32, _ pointer: UnsafeMutableRawPointer?, _ count: Int) -> Int { Darwin.read(fd, pointer, count) }
private func systemClose(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
