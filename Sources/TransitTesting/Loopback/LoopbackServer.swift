import Foundation
import Signals

/// A real HTTP/1.1 server on 127.0.0.1, for tests that must exercise a real network stack
/// (`URLSession`, sockets, chunked transfers, dropped connections) and for runnable examples.
///
/// ```swift
/// try await withLoopbackServer { server in
///     server.enqueue(.json(#"{"id":1}"#))                       // the next request gets this
///     server.enqueue(.status(503).delayed(by: .seconds(10)))    // the one after waits 10 s, then 503
///     let url = server.url("/posts")
///     // … send requests to url …
/// }
/// ```
///
/// ``withLoopbackServer(handler:isolation:_:)`` starts a server, runs the test with it and stops
/// it; a server that outlives one test (an example's embedded API) is started with ``start()``
/// and stopped with ``stop()``.
///
/// **Answers.** Each request is answered by the first queued ``LoopbackResponse`` whose matcher
/// accepts it (see ``enqueue(_:matching:)``); queued responses are used once, in order. When none
/// matches, the ``handler`` answers (routing logic, such as a small REST API). With neither,
/// the server answers `404` with a body naming the request, so a test fails clearly rather than
/// hanging.
///
/// **Recording.** Every request that was parsed is recorded (``requests``) before it is
/// answered, and ``sentBodyByteCount`` counts the body bytes sent.
///
/// **Protocol.** Requests with `Content-Length` or chunked bodies, `Expect: 100-continue`,
/// keep-alive with any number of requests per connection (pipelined ones too), `Connection:
/// close` and HTTP/1.0 are supported. A malformed request is answered `400` (or `413`, `431`,
/// `501`, `505`) with the reason in the body, and its connection is closed. Heads are limited to
/// 64 KiB and bodies to 128 MiB.
///
/// **Lifecycle.** ``start()`` binds an ephemeral port on 127.0.0.1 and starts one accept thread;
/// each connection gets its own thread. ``stop()`` is immediate: it wakes every thread (delays
/// and reads wait on a wake-up pipe, never in a plain sleep), shuts every connection down,
/// joins every thread and closes every descriptor, so nothing leaks into the next test. Releasing
/// the server stops it too. A server starts once; make a new one to start again.
///
/// Thread safety: all state is behind one `Locked`; every method may be called from any thread.
/// Handlers and matchers run on connection threads, outside the lock. Do not call ``stop()``
/// from a handler.
public final class LoopbackServer: Sendable {
    /// Computes the answer to a request that no queued response took.
    public typealias Handler = @Sendable (LoopbackRequest) -> LoopbackResponse

    /// Why ``start()`` failed.
    package struct StartError: Error, CustomStringConvertible, Sendable {
        /// The call that failed (`socket`, `bind`, `listen`, …) or `start` for a server that was
        /// already started.
        package let step: String
        /// The `errno` of the failed call, `0` when there is none.
        package let errorNumber: Int32

        init(step: String, errorNumber: Int32) {
            self.step = step
            self.errorNumber = errorNumber
        }

        package var description: String {
            if step == "start" { return "LoopbackServer: start() called twice; a server starts once, make a new one" }
            return "LoopbackServer: \(step) failed with errno \(errorNumber) (\(String(cString: strerror(errorNumber))))"
        }
    }

    let core: LoopbackServerCore

    /// Creates a stopped server. `handler` answers requests that no queued response takes.
    public init(handler: Handler? = nil) {
        core = LoopbackServerCore(handler: handler)
    }

    deinit {
        core.stop()
    }

    /// Binds 127.0.0.1 on an ephemeral port and starts accepting connections.
    ///
    /// - Throws: an error naming the failed call and its `errno` if the socket cannot be set up,
    ///   or if the server was started before.
    public func start() throws {
        try core.start(port: 0)
    }

    /// Binds 127.0.0.1 on `port` and starts accepting connections: a server that comes back
    /// where a stopped one was, as a host that recovers does (host failover, reconnection).
    ///
    /// - Throws: `StartError` with step `"port"` for a port outside 1…65535, step `"bind"`
    ///   (`EADDRINUSE`) when something listens there already, or as ``start()``.
    package func start(onPort port: Int) throws {
        guard (1...65_535).contains(port) else { throw StartError(step: "port", errorNumber: EINVAL) }
        try core.start(port: port)
    }

    /// Stops the server: closes the listening socket and every connection (a request waiting on
    /// a delay is dropped at once), joins every thread and closes every descriptor. Returns when
    /// all of that is done. Calling it again, or on a server that never started, does nothing.
    public func stop() {
        core.stop()
    }

    /// The port the server listens on; `0` before ``start()``.
    public var port: Int {
        core.state.withLock { $0.port }
    }

    /// `http://127.0.0.1:<port>` followed by `pathAndQuery` (which should start with `/`), such as
    /// `url("/posts?page=2")`; `url()` is the server's base URL. Only meaningful after ``start()``.
    public func url(_ pathAndQuery: String = "") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(pathAndQuery)") ?? URL(string: "http://127.0.0.1:\(port)")!
    }

    /// How many response body bytes the server has handed to its sockets so far, over every
    /// connection: the bytes of whole (``LoopbackResponse/status(_:headers:body:)`` and the
    /// like), ``LoopbackResponse/chunked(_:interval:status:headers:)`` (chunk data, not the chunk
    /// framing) and ``LoopbackResponse/paced(_:interval:status:headers:)`` bodies, up to a
    /// ``LoopbackResponse/closingMidBody(afterBytes:)`` cut. Each write is counted just before it
    /// is made, so bytes a client has received are always counted. Lets a test prove that a
    /// client did not fetch bytes twice (a resumed download).
    public var sentBodyByteCount: Int {
        core.state.withLock { $0.sentBodyBytes }
    }

    /// `true` between ``start()`` and ``stop()``.
    package var isRunning: Bool {
        core.state.withLock { $0.phase == .running }
    }

    /// The handler for requests that no queued response takes. May be replaced at any time.
    public var handler: Handler? {
        get { core.state.withLock { $0.handler } }
        set {
            core.state.withLock { $0.handler = newValue }
        }
    }

    /// Queues `response` for the next request that `matching` accepts (any request when
    /// `matching` is `nil`). Queued responses are used once each, in the order they were queued,
    /// and take precedence over the ``handler``.
    public func enqueue(_ response: LoopbackResponse, matching: (@Sendable (LoopbackRequest) -> Bool)? = nil) {
        core.mutate { state in
            state.script.append(.init(id: state.nextScriptID, response: response, matches: matching))
            state.nextScriptID += 1
        }
    }

    /// Queues `responses`, in order, for the next requests.
    package func enqueue(_ responses: [LoopbackResponse]) {
        for response in responses { enqueue(response) }
    }

    /// How many queued responses are still waiting for a request.
    package var queuedResponseCount: Int {
        core.state.withLock { $0.script.count }
    }

    /// Every request received so far, in the order they were read.
    public var requests: [LoopbackRequest] {
        core.state.withLock { $0.requests }
    }

    /// Forgets the recorded requests (a long-running server records every request otherwise).
    public func clearRequests() {
        core.mutate { $0.requests = [] }
    }

    /// How many connections the server has accepted since it started.
    public var connectionCount: Int {
        core.state.withLock { $0.acceptedCount }
    }

    /// How many connections are open now.
    public var openConnectionCount: Int {
        core.state.withLock { $0.connections.count }
    }

    /// How many connections ended because the client closed them (end of stream or reset seen
    /// while reading, waiting or writing), as opposed to the server closing them.
    public var clientClosedConnectionCount: Int {
        core.state.withLock { $0.clientClosedCount }
    }

    /// Waits until `condition` is true, re-checking it whenever the server's state changes (a
    /// connection opened or closed, a request arrived, a response was sent). Returns `false` if
    /// `timeout` (real time) passed first or the task was cancelled.
    ///
    /// ```swift
    /// let closed = await server.waitUntil { server.clientClosedConnectionCount == 1 }
    /// #expect(closed)
    /// ```
    public func waitUntil(timeout: Duration = .seconds(30), _ condition: @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let generation = core.state.withLock { $0.generation }
            if condition() { return true }
            if ContinuousClock.now >= deadline || Task.isCancelled { return false }
            await core.waitForChange(after: generation, deadline: deadline)
        }
    }
}

/// The state and threads of a ``LoopbackServer``. Threads hold the core, not the server, so
/// releasing the server stops it.
final class LoopbackServerCore: Sendable {
    enum Phase: Sendable { case idle, running, stopping, stopped }

    struct ScriptEntry: Sendable {
        var id: Int
        var response: LoopbackResponse
        var matches: (@Sendable (LoopbackRequest) -> Bool)?
    }

    struct State: Sendable {
        var phase = Phase.idle
        var port = 0
        var listener: Int32 = -1
        var wake: (read: Int32, write: Int32)?
        var acceptThread: JoinableThread?
        /// Open connections: their descriptors by connection id. A descriptor is closed, and
        /// removed from here, under the lock, so `stop()` never shuts down a reused number.
        var connections: [Int: Int32] = [:]
        var threads: [Int: JoinableThread] = [:]
        var finished: [Int] = []
        var nextConnectionID = 1
        var acceptedCount = 0
        var sentBodyBytes = 0
        var clientClosedCount = 0
        var requests: [LoopbackRequest] = []
        var script: [ScriptEntry] = []
        var nextScriptID = 0
        var handler: LoopbackServer.Handler?
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
    }

    let state: Locked<State>

    init(handler: LoopbackServer.Handler?) {
        state = Locked(State(handler: handler))
    }

    /// Changes the state, counts the change and wakes everyone waiting for one.
    func mutate<R>(_ body: (inout State) -> R) -> R {
        let (result, waiters) = state.withLock { state -> (R, [CheckedContinuation<Void, Never>]) in
            let result = body(&state)
            state.generation += 1
            defer { state.waiters = [:] }
            return (result, Array(state.waiters.values))
        }
        for waiter in waiters { waiter.resume() }
        return result
    }

    func waitForChange(after generation: Int, deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        let timer = Task { [self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            resumeWaiter(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation || ContinuousClock.now >= deadline { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            resumeWaiter(id)
        }
        timer.cancel()
    }

    private func resumeWaiter(_ id: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }

    /// Starts listening on `port` (0: an ephemeral one).
    func start(port requested: Int) throws {
        let listening = try state.withLock { state -> (listener: Int32, wake: Int32) in
            guard state.phase == .idle else { throw LoopbackServer.StartError(step: "start", errorNumber: 0) }
            let (listener, port) = try POSIX.listenOnLoopback(port: requested).get()
            guard let wake = POSIX.makePipe() else {
                let error = POSIX.errorNumber
                POSIX.closeDescriptor(listener)
                throw LoopbackServer.StartError(step: "pipe", errorNumber: error)
            }
            state.listener = listener
            state.port = port
            state.wake = wake
            state.phase = .running
            return (listener, wake.read)
        }
        guard let thread = JoinableThread.start({ [self] in acceptLoop(listener: listening.listener, wake: listening.wake) }) else {
            stop()
            throw LoopbackServer.StartError(step: "pthread_create", errorNumber: POSIX.errorNumber)
        }
        state.withLock { $0.acceptThread = thread }
    }

    func stop() {
        let stopping = state.withLock { state -> (accept: JoinableThread?, wake: Int32)? in
            guard state.phase == .running, let wake = state.wake else {
                if state.phase == .idle { state.phase = .stopped }
                return nil
            }
            state.phase = .stopping
            // Wake threads blocked in send() or recv(); they close their own descriptors.
            for fd in state.connections.values { POSIX.shutdownBoth(fd) }
            return (state.acceptThread, wake.write)
        }
        guard let stopping else { return }
        POSIX.wake(stopping.wake)
        if let accept = stopping.accept, !accept.isCurrent { accept.join() }
        let threads = state.withLock { state -> [JoinableThread] in
            defer { state.threads = [:] }
            return Array(state.threads.values)
        }
        for thread in threads where !thread.isCurrent { thread.join() }
        mutate { state in
            POSIX.closeDescriptor(state.listener)
            if let wake = state.wake {
                POSIX.closeDescriptor(wake.read)
                POSIX.closeDescriptor(wake.write)
            }
            state.listener = -1
            state.wake = nil
            state.acceptThread = nil
            state.finished = []
            state.phase = .stopped
        }
    }

    private func acceptLoop(listener: Int32, wake: Int32) {
        while true {
            switch POSIX.waitReadable(listener, wake: wake, timeoutMilliseconds: -1) {
            case .woken:
                return
            case .timedOut:
                continue
            case .readable:
                break
            }
            let fd = POSIX.acceptConnection(listener)
            guard fd >= 0 else {
                // Out of descriptors or an aborted handshake: back off briefly, stay stoppable.
                _ = POSIX.waitReadable(nil, wake: wake, timeoutMilliseconds: 10)
                continue
            }
            let accepted = mutate { state -> (id: Int, reaped: [JoinableThread])? in
                guard state.phase == .running else { return nil }
                let id = state.nextConnectionID
                state.nextConnectionID += 1
                state.connections[id] = fd
                state.acceptedCount += 1
                var reaped: [JoinableThread] = []
                state.finished.removeAll { finishedID in
                    guard let thread = state.threads.removeValue(forKey: finishedID) else { return false }
                    reaped.append(thread)
                    return true
                }
                return (id, reaped)
            }
            guard let accepted else {
                POSIX.closeDescriptor(fd)
                return
            }
            for thread in accepted.reaped { thread.join() }
            let id = accepted.id
            if let thread = JoinableThread.start({ [self] in serve(fd: fd, id: id, wake: wake) }) {
                state.withLock { $0.threads[id] = thread }
            } else {
                connectionEnded(id: id, fd: fd, byClient: false)
            }
        }
    }

    /// Forgets connection `id`, closes its descriptor (under the lock) and records how it ended.
    func connectionEnded(id: Int, fd: Int32, byClient: Bool) {
        mutate { state in
            state.connections.removeValue(forKey: id)
            POSIX.closeDescriptor(fd)
            if byClient, state.phase == .running { state.clientClosedCount += 1 }
            state.finished.append(id)
        }
    }

    /// Records `request` and picks its answer: the first queued response that matches, else the
    /// handler's, else a 404 naming the request.
    func answer(to request: LoopbackRequest) -> LoopbackResponse {
        let (script, handler) = mutate { state in
            state.requests.append(request)
            return (state.script, state.handler)
        }
        for entry in script where entry.matches?(request) ?? true {
            let taken = mutate { state -> Bool in
                guard let index = state.script.firstIndex(where: { $0.id == entry.id }) else { return false }
                state.script.remove(at: index)
                return true
            }
            if taken { return entry.response }
        }
        if let handler { return handler(request) }
        return .text("LoopbackServer: nothing queued and no handler for \(request.method) \(request.target)", status: 404)
    }

    /// Tells waiters that something observable happened (a response was sent).
    func touch() {
        mutate { _ in }
    }
}

/// Runs `body` with a started ``LoopbackServer`` and stops the server when `body` returns or
/// throws, so no thread, socket or queued response outlives the test.
///
/// ```swift
/// try await withLoopbackServer { server in
///     server.enqueue(.json(#"{"id":1}"#))
///     let response = try await client.send(URLRequest(url: server.url("/posts/1"))).firstValue()
///     #expect(server.requests.map(\.path) == ["/posts/1"])
/// }
/// ```
///
/// - Parameters:
///   - handler: the server's ``LoopbackServer/handler``, for requests no queued response takes.
///   - isolation: the actor `body` runs on: the caller's, by default.
///   - body: the test, given the started server.
/// - Returns: what `body` returns.
/// - Throws: the error of ``LoopbackServer/start()`` if the server cannot start, or what `body`
///   throws.
public func withLoopbackServer<R>(
    handler: LoopbackServer.Handler? = nil,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LoopbackServer) async throws -> R
) async throws -> R {
    let server = LoopbackServer(handler: handler)
    try server.start()
    defer { server.stop() }
    return try await body(server)
}
