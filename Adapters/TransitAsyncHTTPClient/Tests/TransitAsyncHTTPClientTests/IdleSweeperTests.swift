import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Signals
import Testing
import Transit
@testable import TransitAsyncHTTPClient

/// The one repeating check that enforces every exchange's idle timeout, in virtual time
/// (`EmbeddedEventLoop.advanceTime`): when it ticks, whom it expires, when it stops.
@Suite("Idle sweeper")
struct IdleSweeperTests {
    /// An exchange whose idleness the test sets; counts its expirations.
    final class FakeExchange: IdleSweeper.Exchange {
        private let state = NIOLockedValueBox((idle: false, expirations: 0))
        /// Runs inside `expire()`: a test uses it to call back into the sweeper.
        let onExpire: @Sendable () -> Void

        init(onExpire: @escaping @Sendable () -> Void = {}) {
            self.onExpire = onExpire
        }

        var idle: Bool {
            get { state.withLockedValue { $0.idle } }
            set { state.withLockedValue { $0.idle = newValue } }
        }

        var expirations: Int { state.withLockedValue { $0.expirations } }

        func isIdle(at now: NIODeadline) -> Bool { state.withLockedValue { $0.idle } }

        func expire() {
            state.withLockedValue { $0.expirations += 1 }
            onExpire()
        }
    }

    @Test func theTickIsATenthOfTheTimeoutWithinItsBounds() {
        #expect(IdleSweeper.tick(for: .seconds(1)) == .milliseconds(100))
        #expect(IdleSweeper.tick(for: .seconds(60)) == .seconds(1))
        #expect(IdleSweeper.tick(for: .seconds(3600)) == IdleSweeper.coarsestTick)
        #expect(IdleSweeper.tick(for: .milliseconds(10)) == IdleSweeper.finestTick)
        #expect(IdleSweeper.tick(for: .zero) == IdleSweeper.finestTick)
    }

    @Test func anIdleExchangeIsExpiredOnceAtTheNextTick() {
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        let exchange = FakeExchange()
        sweeper.register(exchange, timeout: .seconds(1))  // ticks every 100 ms
        loop.advanceTime(by: .milliseconds(100))
        #expect(exchange.expirations == 0, "not idle yet")
        exchange.idle = true
        loop.advanceTime(by: .milliseconds(99))
        #expect(exchange.expirations == 0, "no tick since it became idle")
        loop.advanceTime(by: .milliseconds(1))
        #expect(exchange.expirations == 1)
        #expect(sweeper.registeredCount == 0, "an expired exchange is no longer swept")
        loop.advanceTime(by: .seconds(1))
        #expect(exchange.expirations == 1, "expired once")
    }

    @Test func onlyTheIdleExchangesAreExpired() {
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        let busy = FakeExchange()
        let silent = FakeExchange()
        sweeper.register(busy, timeout: .seconds(1))
        sweeper.register(silent, timeout: .seconds(1))
        silent.idle = true
        loop.advanceTime(by: .milliseconds(100))
        #expect(silent.expirations == 1)
        #expect(busy.expirations == 0)
        #expect(sweeper.registeredCount == 1)
        #expect(sweeper.isTicking, "the busy exchange is still watched")
    }

    @Test func theTickerStopsWhenNothingIsRegisteredAndRestartsOnTheNextRegistration() {
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        #expect(!sweeper.isTicking)
        let first = FakeExchange()
        sweeper.register(first, timeout: .seconds(1))
        #expect(sweeper.isTicking)
        sweeper.unregister(first)
        // Unregistering does not stop it (a client sending one request after another would
        // restart it every time); the next tick that finds nothing does.
        #expect(sweeper.isTicking)
        loop.advanceTime(by: .milliseconds(100))
        #expect(!sweeper.isTicking)
        let second = FakeExchange()
        sweeper.register(second, timeout: .seconds(1))
        #expect(sweeper.isTicking)
        second.idle = true
        loop.advanceTime(by: .milliseconds(100))
        #expect(second.expirations == 1, "the restarted ticker sweeps")
        #expect(first.expirations == 0, "an unregistered exchange is never expired")
    }

    @Test func aShorterTimeoutMakesARunningTickerFiner() {
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        let slow = FakeExchange()
        sweeper.register(slow, timeout: .seconds(60))  // ticks every second
        let quick = FakeExchange()
        sweeper.register(quick, timeout: .milliseconds(500))  // needs 50 ms
        quick.idle = true
        loop.advanceTime(by: .milliseconds(50))
        #expect(quick.expirations == 1, "swept at the finer tick, not after a second")
        #expect(slow.expirations == 0)
    }

    @Test func aLongerTimeoutKeepsTheFinerTicker() {
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        let quick = FakeExchange()
        sweeper.register(quick, timeout: .milliseconds(500))  // 50 ms
        let slow = FakeExchange()
        sweeper.register(slow, timeout: .seconds(60))
        quick.idle = true
        loop.advanceTime(by: .milliseconds(50))
        #expect(quick.expirations == 1)
    }

    @Test func anExchangeMayCallTheSweeperFromExpire() {
        // `expire()` runs without the sweeper's lock held: calling back into the sweeper (as a
        // delegate's end does, unregistering) must not deadlock.
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        let other = FakeExchange()
        let exchange = FakeExchange { sweeper.unregister(other) }
        sweeper.register(exchange, timeout: .seconds(1))
        sweeper.register(other, timeout: .seconds(1))
        exchange.idle = true
        loop.advanceTime(by: .milliseconds(100))
        #expect(exchange.expirations == 1)
        #expect(sweeper.registeredCount == 0)
    }

    @Test func theTickerDoesNotKeepItsSweeperAlive() {
        let loop = EmbeddedEventLoop()
        weak var released: IdleSweeper?
        do {
            let sweeper = IdleSweeper(eventLoopGroup: loop)
            released = sweeper
            sweeper.register(FakeExchange(), timeout: .seconds(1))
        }
        #expect(released == nil, "the ticker does not keep its sweeper alive")
        // The ticker then finds no sweeper and cancels itself.
        loop.advanceTime(by: .seconds(1))
    }

    @Test func anAsyncHTTPClientExchangeThatEndedIsDroppedAtTheNextTickNotExpired() async throws {
        // An exchange may end before it is registered (AsyncHTTPClient answered, or it was
        // cancelled, before `execute` returned): the sweeper then drops it at its next tick.
        let transport = AsyncHTTPClientTransport()
        let events = NIOLockedValueBox<[String]>([])
        let observer = Observer<HTTPResponsePart, any Error> { event in
            events.withLockedValue { $0.append("\(event)") }
        }
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        let live = ExchangeDelegate(url: url, observer: observer, idleTimeout: 60, transport: transport, ruleTLS: nil, callerChoseEncodings: false)
        let ended = ExchangeDelegate(url: url, observer: observer, idleTimeout: 60, transport: transport, ruleTLS: nil, callerChoseEncodings: false)
        ended.cancel()
        let loop = EmbeddedEventLoop()
        let sweeper = IdleSweeper(eventLoopGroup: loop)
        sweeper.register(live, timeout: .seconds(60))
        sweeper.register(ended, timeout: .seconds(60))  // ticks every second
        #expect(!live.isIdle(at: .now()), "a live exchange is not idle before its timeout")
        #expect(ended.isIdle(at: .now()), "an ended exchange is dropped")
        loop.advanceTime(by: .seconds(1))
        #expect(sweeper.registeredCount == 1, "the ended exchange was dropped; the live one is still watched")
        #expect(events.withLockedValue { $0 }.isEmpty, "nothing is delivered by dropping or cancelling")
        live.cancel()
        loop.advanceTime(by: .seconds(1))
        #expect(sweeper.registeredCount == 0)
        loop.advanceTime(by: .seconds(1))
        #expect(!sweeper.isTicking, "the ticker stops once nothing is watched")
        try await transport.shutdown()
    }
}
