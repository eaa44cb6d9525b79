import Signals
import Tracing

/// Places the times of events (read on the client's scheduler, virtual under a `TestScheduler`)
/// on the wall clock: the first time seen is the wall clock's now, and every later one is that
/// plus the scheduler's time since. So span durations are the scheduler's, exact in tests.
final class EventClock: Sendable {
    /// The first event's time and the wall clock then.
    private let anchor = Locked<(time: Duration, wall: UInt64)?>(nil)

    /// The instant of the event at `time`.
    func instant(of time: Duration) -> EventInstant {
        let anchor = anchor.withLock { anchor in
            if let anchor { return anchor }
            let first = (time: time, wall: DefaultTracerClock.now.nanosecondsSinceEpoch)
            anchor = first
            return first
        }
        let offset = nanoseconds(time - anchor.time)
        return EventInstant(nanosecondsSinceEpoch: offset >= 0 ? anchor.wall &+ UInt64(offset) : anchor.wall &- UInt64(-offset))
    }
}

/// An instant of an event, in nanoseconds since the Unix epoch.
struct EventInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64

    static func < (lhs: EventInstant, rhs: EventInstant) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }
}
