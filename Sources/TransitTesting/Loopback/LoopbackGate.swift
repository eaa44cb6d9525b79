#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Transit
import Signals

/// A one-shot gate that a scripted ``LoopbackResponse`` waits at (``LoopbackStep/wait(_:)``)
/// until the test opens it: the test decides exactly when the server sends what comes next.
///
/// ```swift
/// let gate = LoopbackGate()
/// server.enqueue(.scripted([.head, .wait(gate), .send(body)]))
/// // … the client has the head; the body has not been sent, and will not be until:
/// gate.open()
/// ```
///
/// The server also reports when it reaches the gate (``waitUntilReached(count:timeout:)``), so a
/// test knows that everything before the gate was sent. A connection waiting at a gate still ends at once when the client closes it or the server
/// stops. An open gate stays open: every later wait at it passes at once.
///
/// Thread safety: every method may be called from any thread.
public final class LoopbackGate: Sendable, CustomStringConvertible {
    /// A name for messages.
    package let name: String
    /// A pipe that becomes readable (and stays so) once the gate opens, so a connection thread
    /// can wait for the gate, its client and the server's stop at once, in one `poll`.
    let pipe: (read: Int32, write: Int32)?
    private let state = Locked((open: false, reached: 0))
    private let changes = AsyncCondition()

    /// Creates a closed gate.
    public init(_ name: String = "gate") {
        self.name = name
        pipe = POSIX.makePipe()
    }

    deinit {
        if let pipe {
            POSIX.closeDescriptor(pipe.read)
            POSIX.closeDescriptor(pipe.write)
        }
    }

    /// Opens the gate: a server waiting at it goes on. Opening it again does nothing.
    public func open() {
        let opened = state.withLock { state -> Bool in
            defer { state.open = true }
            return !state.open
        }
        guard opened else { return }
        if let pipe { POSIX.wake(pipe.write) }
        changes.signal()
    }

    /// `true` once ``open()`` was called.
    package var isOpen: Bool {
        state.withLock { $0.open }
    }

    /// How many times a connection reached this gate (started waiting at it, or passed it
    /// because it was open).
    package var reachedCount: Int {
        state.withLock { $0.reached }
    }

    /// Waits until a connection has reached the gate `count` times in all. Returns `false` if
    /// `timeout` (real time) passed first.
    public func waitUntilReached(count: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await changes.waitUntil(timeout: timeout) { reachedCount >= count }
    }

    func markReached() {
        state.withLock { $0.reached += 1 }
        changes.signal()
    }

    /// The gate's name and whether it is open.
    public var description: String { "LoopbackGate(\(name), \(isOpen ? "open" : "closed"))" }
}

/// One step of a scripted response (``LoopbackResponse/scripted(status:headers:contentLength:_:)``).
public enum LoopbackStep: Sendable {
    /// Sends the status line and the headers. Without this step the head is sent before the first
    /// step; with it, the steps before it run first (a gate before the head stalls the response).
    case head
    /// Sends these body bytes (one chunk on the wire when the body is chunked). Empty data sends
    /// nothing. Skipped when the response has no body (a `HEAD` request, `204`, `304`).
    case send(Data)
    /// Waits until the gate opens (or the client closes the connection, or the server stops).
    case wait(LoopbackGate)
    /// Waits this long, in real time (the client closing or the server stopping ends it at once).
    case pause(Duration)
    /// Resets the connection (TCP RST, as a crashed peer or a middlebox does), whatever was
    /// announced.
    case reset
    /// Closes the connection (a clean FIN), whatever the framing announced: a truncated body.
    case close
    /// Sends these body bytes `times` times over (each one chunk on the wire when the body is
    /// chunked), without keeping more than one copy: a body of gigabytes, or one without end
    /// (`Int.max`) that only the client closing stops.
    case sendRepeatedly(Data, times: Int)
}

extension LoopbackResponse {
    /// A response sent step by step under the test's control: the head, body bytes, waits at
    /// ``LoopbackGate``s, pauses, and a reset or close at any point.
    ///
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: header fields, sent sorted by name.
    ///   - contentLength: the `Content-Length` to announce; `nil` sends the body chunked (each
    ///     ``LoopbackStep/send(_:)`` is a chunk, and the last empty chunk goes out after the last
    ///     step unless the script closed or reset the connection).
    ///   - steps: what to do, in order.
    ///
    /// ```swift
    /// // The head and 1 KiB, then hold the rest until the test opens `gate`.
    /// .scripted(contentLength: 2048, [.send(firstHalf), .wait(gate), .send(secondHalf)])
    /// ```
    public static func scripted(
        status: Int = 200,
        headers: [String: String] = [:],
        contentLength: Int? = nil,
        _ steps: [LoopbackStep]
    ) -> LoopbackResponse {
        let fields = headers.sorted { $0.key < $1.key }.map { HTTPField(name: $0.key, value: $0.value) }
        return LoopbackResponse(status: status, headers: fields, body: .scripted(steps, contentLength: contentLength))
    }
}

extension LoopbackServerCore {
    /// Bytes buffered from a client while a script waits; past this the server stops reading.
    private static var maxBufferedWhileWaiting: Int { 1 << 20 }

    /// Runs a scripted response on connection `fd`.
    func runScript(
        _ steps: [LoopbackStep],
        head: [UInt8],
        chunked: Bool,
        sendsBody: Bool,
        closing: Bool,
        fd: Int32,
        wake: Int32,
        buffer: inout [UInt8]
    ) -> Outcome {
        var headSent = false
        let failed = { () -> Outcome in self.state.withLock { $0.phase != .running } ? .stopped : .clientClosed }
        func sendHead() -> Bool {
            guard !headSent else { return true }
            headSent = true
            return POSIX.sendAll(fd, head)
        }
        if !steps.contains(where: { if case .head = $0 { true } else { false } }), !sendHead() { return failed() }
        for step in steps {
            switch step {
            case .head:
                guard sendHead() else { return failed() }
            case .send(let data):
                guard sendsBody, !data.isEmpty else { continue }
                guard sendHead() else { return failed() }
                let bytes = chunked ? Array(String(data.count, radix: 16).utf8) + [13, 10] + data + [13, 10] : Array(data)
                guard POSIX.sendAll(fd, bytes) else { return failed() }
            case .sendRepeatedly(let data, let times):
                guard sendsBody, !data.isEmpty, times > 0 else { continue }
                guard sendHead() else { return failed() }
                let bytes = chunked ? Array(String(data.count, radix: 16).utf8) + [13, 10] + data + [13, 10] : Array(data)
                for _ in 0..<times {
                    guard POSIX.sendAll(fd, bytes) else { return failed() }
                }
            case .wait(let gate):
                gate.markReached()
                let outcome = waitForScript(gate: gate, duration: nil, fd: fd, wake: wake, buffer: &buffer)
                guard outcome == .keepOpen else { return outcome }
            case .pause(let duration):
                let outcome = waitForScript(gate: nil, duration: duration, fd: fd, wake: wake, buffer: &buffer)
                guard outcome == .keepOpen else { return outcome }
            case .reset:
                POSIX.setResetOnClose(fd)
                return .close
            case .close:
                return .close
            }
        }
        guard sendHead() else { return failed() }
        if chunked, sendsBody, !POSIX.sendAll(fd, Array("0\r\n\r\n".utf8)) { return failed() }
        return closing ? .close : .keepOpen
    }

    /// Waits until `gate` opens or `duration` passes (whichever is given), but returns at once if
    /// the server stops (`.stopped`) or the client closes the connection (`.clientClosed`).
    /// Returns `.keepOpen` when the gate opened or the time passed.
    private func waitForScript(gate: LoopbackGate?, duration: Duration?, fd: Int32, wake: Int32, buffer: inout [UInt8]) -> Outcome {
        let clock = ContinuousClock()
        let deadline = duration.map { clock.now.advanced(by: $0) }
        while true {
            if gate?.isOpen == true { return .keepOpen }
            var timeout: Int32 = -1
            if let deadline {
                let remaining = clock.now.duration(to: deadline)
                if remaining <= .zero { return .keepOpen }
                timeout = POSIX.milliseconds(remaining)
            }
            // Without a pipe (descriptors exhausted) the gate is checked every 10 ms.
            if let gate, gate.pipe == nil { timeout = timeout < 0 ? 10 : min(timeout, 10) }
            let client: Int32? = buffer.count < Self.maxBufferedWhileWaiting ? fd : nil
            switch POSIX.waitReadable(client, gate: gate?.pipe?.read, wake: wake, timeoutMilliseconds: timeout) {
            case .woken: return .stopped
            case .gate, .timedOut: continue
            case .readable:
                if POSIX.receive(fd, into: &buffer) <= 0 { return .clientClosed }
            }
        }
    }
}

extension POSIX {
    /// What woke ``waitReadable(_:gate:wake:timeoutMilliseconds:)``.
    enum GatedReadiness {
        case woken, gate, readable, timedOut
    }

    /// Waits until the wake pipe, the gate's pipe or `fd` is readable, at most
    /// `timeoutMilliseconds` (negative: no limit). The wake pipe wins over the gate, the gate
    /// over `fd`.
    static func waitReadable(_ fd: Int32?, gate: Int32?, wake: Int32, timeoutMilliseconds: Int32) -> GatedReadiness {
        let interesting = Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)
        var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        fds.append(pollfd(fd: gate ?? -1, events: Int16(POLLIN), revents: 0))
        fds.append(pollfd(fd: fd ?? -1, events: Int16(POLLIN), revents: 0))
        while true {
            let count = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
            if count < 0 {
                if errno == EINTR { continue }
                return .woken
            }
            if count == 0 { return .timedOut }
            if fds[0].revents & interesting != 0 { return .woken }
            if fds[1].revents & interesting != 0 { return .gate }
            return .readable
        }
    }

    /// Makes closing `fd` reset the connection (`SO_LINGER` with a zero timeout: the kernel sends
    /// a TCP RST instead of a FIN and drops unsent data).
    static func setResetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}
