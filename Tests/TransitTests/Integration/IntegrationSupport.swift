import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A one-shot gate that async code can wait on with a real-time bound, without polling.
final class IntegrationGate: Sendable {
    private let state = Locked<(open: Bool, waiters: [Int: CheckedContinuation<Void, Never>], next: Int)>((false, [:], 0))

    /// Opens the gate and wakes every waiter. Opening again does nothing.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var isOpen: Bool { state.withLock { $0.open } }

    /// Waits until the gate opens; `false` if `timeout` passed first.
    func wait(timeout: Duration = .seconds(30)) async -> Bool {
        let id = state.withLock { state -> Int in
            defer { state.next += 1 }
            return state.next
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
        return isOpen
    }
}

/// Records the events of one transport subscription, checks that nothing follows a terminal
/// event, and lets a test wait for the terminal event.
final class TransportRecorder: Sendable {
    private let state = Locked<(events: [Event<HTTPResponse, any Error>], violations: Int)>(([], 0))
    private let terminal = IntegrationGate()

    var observer: Observer<HTTPResponse, any Error> {
        Observer { [self] event in
            state.withLock { state in
                if state.events.last?.isTerminal == true { state.violations += 1 }
                state.events.append(event)
            }
            if event.isTerminal { terminal.open() }
        }
    }

    func subscribe(to signal: Signal<HTTPResponse, any Error>) -> CancellationToken {
        signal.observe(observer)
    }

    /// Waits for the terminal event; `false` if it did not come within `timeout`.
    func waitForCompletion(timeout: Duration = .seconds(30)) async -> Bool {
        await terminal.wait(timeout: timeout)
    }

    var events: [Event<HTTPResponse, any Error>] { state.withLock { $0.events } }
    var responses: [HTTPResponse] { events.compactMap(\.value) }
    var isFinished: Bool { if case .finished? = events.last { return true } else { return false } }
    var error: (any Error)? { if case .failed(let error)? = events.last { return error } else { return nil } }
    var urlError: URLError? { error as? URLError }
    var violations: Int { state.withLock { $0.violations } }
}

/// Sends `request` through `transport` and waits (real time, bounded) for the outcome.
func sendAndWait(_ transport: some HTTPTransport, _ request: URLRequest, timeout: Duration = .seconds(30)) async throws -> TransportRecorder {
    let recorder = TransportRecorder()
    let token = recorder.subscribe(to: transport.send(request))
    let completed = await recorder.waitForCompletion(timeout: timeout)
    withExtendedLifetime(token) {}
    try #require(completed, "no terminal event within \(timeout) for \(request.url?.absoluteString ?? "?")")
    #expect(recorder.violations == 0)
    return recorder
}

/// Collects the attempts (``HTTPAttemptMetrics``) the monitors of a client see.
final class AttemptLog: HTTPEventMonitor {
    private let state = Locked<[HTTPAttemptMetrics]>([])

    func receive(_ event: HTTPEvent) {
        if case .attemptEnded(let metrics) = event.kind { state.withLock { $0.append(metrics) } }
    }

    var attempts: [HTTPAttemptMetrics] { state.withLock { $0 } }
}

/// Sends `request` through `client` and waits (real time, bounded) for the outcome.
func sendAndWait(_ client: HTTPClient, _ request: URLRequest, timeout: Duration = .seconds(30)) async throws -> TransportRecorder {
    let recorder = TransportRecorder()
    let token = recorder.subscribe(to: client.send(request))
    let completed = await recorder.waitForCompletion(timeout: timeout)
    withExtendedLifetime(token) {}
    try #require(completed, "no terminal event within \(timeout) for \(request.url?.absoluteString ?? "?")")
    #expect(recorder.violations == 0)
    return recorder
}

/// A blocking TCP client on raw sockets, to send exact bytes (malformed ones too) to a
/// ``LoopbackServer`` and read exactly what it answers. Every read is bounded in real time.
final class RawConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A parsed response.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? {
            headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
        }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private(set) var fd: Int32
    /// Bytes read but not yet consumed by a parsed response.
    private(set) var buffer: [UInt8] = []
    /// `true` once the server closed the connection.
    private(set) var sawEndOfStream = false

    init(port: Int) throws {
        #if canImport(Darwin)
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let error = errno
            close() // and mark it closed: deinit runs for a fully initialised object that throws
            throw Failure(description: "connect failed: errno \(error)")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { systemClose(fd) }
        fd = -1
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)
            #endif
            let written = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress! + offset, bytes.count - offset, flags) }
            guard written > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Reads more bytes; returns `false` at end of stream. Throws when `deadline` passes.
    @discardableResult
    func readMore(until deadline: ContinuousClock.Instant) throws -> Bool {
        guard !sawEndOfStream else { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw Failure(description: "timed out waiting for the server") }
            let millis = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&descriptor, 1, max(1, millis))
            if ready > 0 { break }
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 {
            sawEndOfStream = true
            return false
        }
        buffer += chunk[0..<count]
        return true
    }

    /// Reads until the server closes the connection; returns everything unconsumed.
    func readToEnd(timeout: Duration = .seconds(30)) throws -> [UInt8] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while try readMore(until: deadline) {}
        defer { buffer = [] }
        return buffer
    }

    /// Reads and consumes one response (Content-Length, chunked, or until close). `toHEAD`: the
    /// response to a HEAD request, which has no body whatever its headers say.
    func readResponse(toHEAD: Bool = false, timeout: Duration = .seconds(30)) throws -> Response {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let (response, used) = try Self.parse(buffer, complete: sawEndOfStream, noBody: toHEAD) {
                buffer.removeFirst(used)
                return response
            }
            guard try readMore(until: deadline) else {
                if let (response, used) = try Self.parse(buffer, complete: true, noBody: toHEAD) {
                    buffer.removeFirst(used)
                    return response
                }
                throw Failure(description: "connection closed before a complete response; got \(String(decoding: buffer, as: UTF8.self))")
            }
        }
    }

    private static func parse(_ bytes: [UInt8], complete: Bool, noBody: Bool) throws -> (Response, Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(head[0])") }
        let headers = head.dropFirst().map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = Response(status: status, headers: headers, body: [])
        let bodyStart = end + 4
        if noBody || status == 100 || status == 204 || status == 304 { return (response, bodyStart) }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            guard bytes.count - bodyStart >= length else { return nil }
            response.body = Array(bytes[bodyStart..<bodyStart + length])
            return (response, bodyStart + length)
        }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var index = bodyStart
            var body: [UInt8] = []
            while true {
                guard let lineEnd = (index..<max(index, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) else { return nil }
                guard let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16) else { throw Failure(description: "bad chunk size") }
                index = lineEnd + 2
                if size == 0 {
                    guard bytes.count >= index + 2 else { return nil }
                    response.body = body
                    return (response, index + 2)
                }
                guard bytes.count >= index + size + 2 else { return nil }
                body += bytes[index..<index + size]
                index += size + 2
            }
        }
        guard complete else { return nil }
        response.body = Array(bytes[bodyStart...])
        return (response, bytes.count)
    }
}

#if canImport(Glibc)
private func systemClose(_ fd: Int32) { _ = Glibc.close(fd) }
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int { Glibc.send(fd, pointer, count, flags) }
#else
private func systemClose(_ fd: Int32) { _ = Darwin.close(fd) }
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int { Darwin.send(fd, pointer, count, flags) }
#endif

/// A port on 127.0.0.1 that nothing listens on: a server is started, its port noted, and the
/// server stopped (so connecting is refused).
func closedLoopbackPort() throws -> Int {
    let server = LoopbackServer()
    try server.start()
    let port = server.port
    server.stop()
    return port
}

/// Re-checks `condition` until it holds or `timeout` (real time) passes, for conditions nothing
/// signals (an object released on another thread). Checks every millisecond.
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}


/// A new empty folder under the temporary directory, for a test's downloads; the caller removes it.
func makeDownloadFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-dl-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// `count` bytes, the `i`-th being `byte(i)`, written in place: under the thread sanitizer a `map`
/// over millions of indices takes seconds of a cooperative thread, and starves the tests running
/// beside it.
func patternedData(count: Int, _ byte: (Int) -> UInt8) -> Data {
    var data = Data(count: count)
    data.withUnsafeMutableBytes { raw in
        let bytes = raw.bindMemory(to: UInt8.self)
        for index in 0..<count { bytes[index] = byte(index) }
    }
    return data
}
