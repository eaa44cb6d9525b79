import Foundation
import OpenAPIRuntime
import Signals
import Transit

/// A streamed response read from async code: the head once it arrives, then the body chunk by
/// chunk, with at most `bufferLimit` bytes waiting between the network and the reader.
///
/// Signals has no back-pressure: chunks come as the transport receives them. While the reader
/// keeps up, a chunk goes straight to it; while it does not, chunks wait here; once more than
/// `bufferLimit` bytes wait, the transfer is cancelled and the next read fails with
/// ``TransitOpenAPIError/consumerFellBehind(bufferLimit:)`` — never an unbounded buffer, never a
/// silently dropped chunk. Cancelling the reading task, or releasing the body unread, cancels the
/// transfer.
final class StreamedResponse: Sendable {
    /// The shared state and the subscription's observer; it does not own the subscription, so that
    /// releasing the ``StreamedResponse`` ends it.
    private let core: Core
    private let token = CancellationToken()

    /// Subscribes to `parts` at once; `onEnd` runs once, when the transfer ends in any way.
    init(_ parts: Signal<HTTPResponsePart, any Error>, bufferLimit: Int, onEnd: @escaping @Sendable () -> Void) {
        core = Core(bufferLimit: bufferLimit, token: token, onEnd: onEnd)
        let core = core
        parts.observe(Observer { core.receive($0) }, in: token)
    }

    deinit {
        token.cancel()
        core.cancel(CancellationError())
    }

    /// Waits for the response head.
    func head() async throws -> HTTPResponseHead {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                core.waitForHead(continuation)
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// The next body chunk, `nil` at the end of the body.
    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                core.waitForChunk(continuation)
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// Cancels the transfer; a reader waiting gets `CancellationError`.
    func cancel() {
        token.cancel()
        core.cancel(CancellationError())
    }

    /// The body as an async sequence of byte chunks, read once.
    var body: Body { Body(response: self) }

    /// The body of a ``StreamedResponse``: it keeps the response (and so its transfer) alive while
    /// it is held.
    struct Body: AsyncSequence, Sendable {
        typealias Element = ArraySlice<UInt8>
        let response: StreamedResponse

        func makeAsyncIterator() -> Iterator { Iterator(response: response) }

        struct Iterator: AsyncIteratorProtocol {
            let response: StreamedResponse
            mutating func next() async throws -> ArraySlice<UInt8>? {
                try await response.next().map { ArraySlice($0) }
            }
        }
    }

    /// The state, behind one lock; continuations are resumed outside it.
    ///
    /// The lock is an `NSLock` (a pthread mutex), not Synchronization's `Mutex`: on Linux a
    /// contended `Mutex` is handed between threads inside the kernel, where the thread sanitizer
    /// cannot see it, and it reports races on the state the lock protects. `stored` is touched only
    /// inside ``withState(_:)``, which is why the class may be `@unchecked Sendable`.
    private final class Core: @unchecked Sendable {
        private struct State {
            var head: HTTPResponseHead?
            var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
            var chunks: [Data] = []
            var firstChunk = 0
            var bufferedBytes = 0
            var chunkWaiter: CheckedContinuation<Data?, any Error>?
            /// `nil` while the transfer runs; then how it ended for the reader.
            var end: Result<Void, any Error>?
            var onEnd: (@Sendable () -> Void)?
        }

        private let lock = NSLock()
        private var stored: State
        private let bufferLimit: Int
        /// The subscription's scope, cancelled when the transfer ends for the reader (the buffer
        /// overflowed, the reader cancelled).
        private let token: CancellationToken

        init(bufferLimit: Int, token: CancellationToken, onEnd: @escaping @Sendable () -> Void) {
            self.bufferLimit = max(0, bufferLimit)
            self.token = token
            stored = State(onEnd: onEnd)
        }

        /// Runs `body` with the lock held.
        private func withState<R>(_ body: (inout State) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&stored)
        }

        func receive(_ event: Event<HTTPResponsePart, any Error>) {
            switch event {
            case .value(.head(let head)):
                let waiter = withState { state -> CheckedContinuation<HTTPResponseHead, any Error>? in
                    state.head = head
                    defer { state.headWaiter = nil }
                    return state.headWaiter
                }
                waiter?.resume(returning: head)
            case .value(.body(let chunk)):
                enum Outcome { case deliver(CheckedContinuation<Data?, any Error>), buffered, overflow }
                let outcome = withState { state -> Outcome in
                    guard state.end == nil else { return .buffered }
                    if let waiter = state.chunkWaiter {
                        state.chunkWaiter = nil
                        return .deliver(waiter)
                    }
                    state.bufferedBytes += chunk.count
                    guard state.bufferedBytes <= bufferLimit else { return .overflow }
                    state.chunks.append(chunk)
                    return .buffered
                }
                switch outcome {
                case .deliver(let waiter): waiter.resume(returning: chunk)
                case .buffered: break
                case .overflow: end(.failure(TransitOpenAPIError.consumerFellBehind(bufferLimit: bufferLimit)), discardingBuffer: true)
                }
            case .finished:
                let hasHead = withState { $0.head != nil }
                end(hasHead ? .success(()) : .failure(TransitOpenAPIError.missingResponseHead), discardingBuffer: false)
            case .failed(let error):
                end(.failure(error), discardingBuffer: false)
            }
        }

        func cancel(_ error: any Error) {
            end(.failure(error), discardingBuffer: true)
        }

        /// Ends the transfer once: a waiting reader gets the end (after the chunks still buffered,
        /// unless they are discarded), and `onEnd` runs.
        private func end(_ result: Result<Void, any Error>, discardingBuffer: Bool) {
            typealias Waiters = (head: CheckedContinuation<HTTPResponseHead, any Error>?, chunk: CheckedContinuation<Data?, any Error>?, onEnd: (@Sendable () -> Void)?)
            let waiters = withState { state -> Waiters in
                guard state.end == nil else { return (nil, nil, nil) }
                state.end = result
                if discardingBuffer {
                    state.chunks = []
                    state.firstChunk = 0
                    state.bufferedBytes = 0
                }
                let waiters = (state.headWaiter, state.chunkWaiter, state.onEnd)
                state.headWaiter = nil
                state.chunkWaiter = nil
                state.onEnd = nil
                return waiters
            }
            token.cancel()
            waiters.onEnd?()
            switch result {
            case .success:
                waiters.head?.resume(throwing: TransitOpenAPIError.missingResponseHead)
                waiters.chunk?.resume(returning: nil)
            case .failure(let error):
                waiters.head?.resume(throwing: error)
                waiters.chunk?.resume(throwing: error)
            }
        }

        func waitForHead(_ continuation: CheckedContinuation<HTTPResponseHead, any Error>) {
            enum Outcome { case head(HTTPResponseHead), failed(any Error), wait }
            let outcome = withState { state -> Outcome in
                if let head = state.head { return .head(head) }
                switch state.end {
                case .failure(let error): return .failed(error)
                case .success: return .failed(TransitOpenAPIError.missingResponseHead)
                case nil:
                    state.headWaiter = continuation
                    return .wait
                }
            }
            switch outcome {
            case .head(let head): continuation.resume(returning: head)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }

        func waitForChunk(_ continuation: CheckedContinuation<Data?, any Error>) {
            enum Outcome { case chunk(Data?), failed(any Error), wait }
            let outcome = withState { state -> Outcome in
                if state.firstChunk < state.chunks.count {
                    let chunk = state.chunks[state.firstChunk]
                    state.firstChunk += 1
                    state.bufferedBytes -= chunk.count
                    if state.firstChunk == state.chunks.count {
                        state.chunks.removeAll(keepingCapacity: true)
                        state.firstChunk = 0
                    }
                    return .chunk(chunk)
                }
                switch state.end {
                case .success: return .chunk(nil)
                case .failure(let error): return .failed(error)
                case nil:
                    state.chunkWaiter = continuation
                    return .wait
                }
            }
            switch outcome {
            case .chunk(let chunk): continuation.resume(returning: chunk)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }
}
