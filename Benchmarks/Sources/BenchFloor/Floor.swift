// The floor: a minimal closure pipeline, as a library without any guarantee would build it. Every
// operator is one closure, built for every subscription; every source takes one lock per event;
// nothing else (no terminal-event rule, no cancellation, no serialisation). It lives in its own
// module, like any library, so the optimiser cannot fuse a pipeline into the benchmark loop.
import Synchronization


public enum FloorEvent {
    case value(Int)
    case finished
    case failed(any Error)
}

public typealias FloorObserver = (FloorEvent) -> Void
public typealias FloorSignal = (@escaping FloorObserver) -> Void

/// The end of every floor pipeline: adds the values to ``floorTotal``.
public func floorSink(_ event: FloorEvent) {
    if case .value(let value) = event { floorTotal &+= value }
}

/// What the floor sinks received (single-threaded benchmark).
nonisolated(unsafe) public var floorTotal = 0

/// A hot source: one lock per event (it counts what it sent, as a subject tracks its state).
public final class FloorSubject {
    private let sent = Mutex(0)
    private let downstream: FloorObserver

    public init(_ downstream: @escaping FloorObserver) {
        self.downstream = downstream
    }

    public func send(_ event: FloorEvent) {
        sent.withLock { $0 &+= 1 }
        downstream(event)
    }
}

/// A cold source of one value: one lock per event.
public func floorJust(_ value: Int) -> FloorSignal {
    { downstream in
        let state = FloorSourceState()
        if state.accept() { downstream(.value(value)) }
        if state.accept() { downstream(.finished) }
    }
}

/// The per-subscription state of a floor source: a counter behind a lock, taken once per event.
final class FloorSourceState {
    private let events = Mutex(0)

    func accept() -> Bool {
        events.withLock { events in
            events += 1
            return events <= 2
        }
    }
}

public func floorMap(_ transform: @escaping (Int) -> Int, _ downstream: @escaping FloorObserver) -> FloorObserver {
    { event in
        if case .value(let value) = event { downstream(.value(transform(value))) } else { downstream(event) }
    }
}

public func floorFilter(_ isIncluded: @escaping (Int) -> Bool, _ downstream: @escaping FloorObserver) -> FloorObserver {
    { event in
        if case .value(let value) = event, !isIncluded(value) { return }
        downstream(event)
    }
}

public func floorMapSignal(_ transform: @escaping (Int) -> Int, _ upstream: @escaping FloorSignal) -> FloorSignal {
    { downstream in upstream(floorMap(transform, downstream)) }
}

public func floorFlatMap(_ transform: @escaping (Int) -> FloorSignal, _ upstream: @escaping FloorSignal) -> FloorSignal {
    { downstream in
        upstream { event in
            switch event {
            case .value(let value):
                let inner = transform(value)
                inner { event in
                    if case .value = event { downstream(event) }
                }
            case .finished, .failed:
                downstream(event)
            }
        }
    }
}

public func floorTryMap(_ transform: @escaping (Int) throws -> Int, _ upstream: @escaping FloorSignal) -> FloorSignal {
    { downstream in
        upstream { event in
            switch event {
            case .value(let value):
                do { downstream(.value(try transform(value))) } catch { downstream(.failed(error)) }
            case .finished, .failed:
                downstream(event)
            }
        }
    }
}

public func floorCatch(_ handler: @escaping (any Error) -> FloorSignal, _ upstream: @escaping FloorSignal) -> FloorSignal {
    { downstream in
        upstream { event in
            if case .failed(let error) = event { handler(error)(downstream) } else { downstream(event) }
        }
    }
}

public func floorRetry(_ times: Int, _ upstream: @escaping FloorSignal) -> FloorSignal {
    { downstream in
        var remaining = times
        func attempt() {
            upstream { event in
                if case .failed = event, remaining > 0 {
                    remaining -= 1
                    attempt()
                } else {
                    downstream(event)
                }
            }
        }
        attempt()
    }
}

