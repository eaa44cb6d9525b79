import Signals

/// Marble diagrams: the parser and the drawer behind `Signal.marbles(_:values:failure:scheduler:frame:)`
/// and ``SignalRecorder/marbles(frame:from:symbol:)``, which document the notation.
package enum Marbles {
    /// One event of a diagram.
    package enum Symbol: Equatable, Sendable {
        /// A value, named by its character.
        case value(Character)
        /// `|`: the signal finishes.
        case finished
        /// `#`: the signal fails.
        case failed
    }

    /// What was wrong with a diagram; its description names the diagram and the mistake.
    package struct SyntaxError: Error, Equatable, CustomStringConvertible {
        /// The diagram.
        let diagram: String
        /// What is wrong with it.
        let reason: String

        /// Says what is wrong, and where.
        package var description: String {
            "Marble diagram \"\(diagram)\": \(reason)"
        }
    }

    /// The events of `diagram`, each with its tick, in order.
    ///
    /// - Throws: ``SyntaxError`` for an unclosed or nested `[`, a `]` without `[`, an empty
    ///   group, or an event after the terminal event.
    package static func parse(_ diagram: String) throws -> [(tick: Int, symbol: Symbol)] {
        var events: [(tick: Int, symbol: Symbol)] = []
        var tick = 0
        var inGroup = false
        var groupSize = 0
        var ended = false
        func fail(_ reason: String) -> SyntaxError { SyntaxError(diagram: diagram, reason: reason) }
        for character in diagram {
            switch character {
            case " ":
                continue
            case "[":
                guard !inGroup else { throw fail("a group inside a group") }
                inGroup = true
                groupSize = 0
            case "]":
                guard inGroup else { throw fail("a ] without its [") }
                guard groupSize > 0 else { throw fail("an empty group") }
                inGroup = false
                tick += 1
            case "-":
                guard !inGroup else { throw fail("a - inside a group") }
                tick += 1
            default:
                guard !ended else { throw fail("an event after the terminal event") }
                let symbol: Symbol
                switch character {
                case "|": symbol = .finished
                case "#": symbol = .failed
                default: symbol = .value(character)
                }
                if case .value = symbol {} else { ended = true }
                events.append((tick, symbol))
                if inGroup {
                    groupSize += 1
                } else {
                    tick += 1
                }
            }
        }
        guard !inGroup else { throw fail("a [ without its ]") }
        return events
    }

    /// How many whole frames fit in `elapsed` (integer arithmetic, so 3 s in frames of 1 s is 3,
    /// never 2.999…).
    static func ticks(in elapsed: Duration, frame: Duration) -> Int {
        func nanoseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
        let frameNanoseconds = max(1, nanoseconds(frame))
        let elapsedNanoseconds = nanoseconds(elapsed)
        // Rounded down, also before the origin.
        let (quotient, remainder) = elapsedNanoseconds.quotientAndRemainder(dividingBy: frameNanoseconds)
        return Int(remainder < 0 ? quotient - 1 : quotient)
    }

    /// Draws `events` (each with its tick) as a diagram: a tick with no event is `-`, a tick with
    /// one event its symbol, a tick with several a group `[…]`. The diagram ends with the last
    /// event's tick.
    package static func draw(_ events: [(tick: Int, symbol: String)]) -> String {
        guard let last = events.map(\.tick).max() else { return "" }
        var byTick = [[String]](repeating: [], count: last + 1)
        for event in events where event.tick >= 0 { byTick[event.tick].append(event.symbol) }
        return byTick.map { symbols in
            switch symbols.count {
            case 0: return "-"
            case 1: return symbols[0]
            default: return "[" + symbols.joined() + "]"
            }
        }.joined()
    }
}

extension Signal {
    /// A cold signal that plays `diagram` on `scheduler`, one tick every `frame`, counted from
    /// each subscription: a value character sends `values[character]`, `|` finishes, `#` fails
    /// with `failure`.
    ///
    /// A marble diagram is a time line written as text, one character per tick of virtual time:
    ///
    /// | symbol | meaning |
    /// |---|---|
    /// | `-` | a tick in which nothing happens |
    /// | any other character | a value, named by that character, in its tick |
    /// | `\|` | the signal finishes |
    /// | `#` | the signal fails |
    /// | `[ab]` | several events in the same tick (here `a`, then `b`) |
    /// | space | nothing: use it to line diagrams up |
    ///
    /// `"a-b--c|"` sends `a` at tick 0, `b` at tick 2, `c` at tick 5 and finishes at tick 6.
    /// ``SignalRecorder/marbles(frame:from:symbol:)`` draws what a recorder received the same
    /// way, so a test of a time-based operator reads as its specification:
    ///
    /// ```swift
    /// let scheduler = TestScheduler()
    /// let input = Signal<String, Never>.marbles("a-b--c|", scheduler: scheduler)
    /// let recorder = SignalRecorder(input.debounce(for: .seconds(1), scheduler: scheduler), scheduler: scheduler)
    /// scheduler.run()
    /// #expect(recorder.marbles() == "-a-b--|")
    /// ```
    ///
    /// A diagram that cannot be parsed, a value character missing from `values`, or `#` without
    /// a `failure` is a mistake in the test: it is reported with `preconditionFailure`, naming
    /// the diagram.
    public static func marbles(
        _ diagram: String,
        values: [Character: Output],
        failure: Failure? = nil,
        scheduler: TestScheduler,
        frame: Duration = .seconds(1)
    ) -> Signal<Output, Failure> {
        let events: [(tick: Int, event: Event<Output, Failure>)]
        do {
            events = try Marbles.parse(diagram).map { tick, symbol in
                switch symbol {
                case .value(let character):
                    guard let value = values[character] else {
                        preconditionFailure("Marble diagram \"\(diagram)\": no value for \"\(character)\"")
                    }
                    return (tick, .value(value))
                case .finished:
                    return (tick, .finished)
                case .failed:
                    guard let failure else {
                        preconditionFailure("Marble diagram \"\(diagram)\": # needs a failure")
                    }
                    return (tick, .failed(failure))
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
        let timeline = MarbleTimeline(events: events)
        return Signal { observer in
            // One scheduled action per tick, sending that tick's events in order.
            let actions = timeline.ticks.map { tick, tickEvents in
                scheduler.schedule(after: frame * tick) {
                    for event in tickEvents { observer.send(event) }
                }
            }
            return { actions.forEach { $0.cancel() } }
        }
    }
}

extension Signal where Output == String {
    /// A cold signal that plays `diagram` on `scheduler`, one tick every `frame`: each value
    /// character is sent as a one-character string, `|` finishes, `#` fails with `failure`.
    public static func marbles(
        _ diagram: String,
        failure: Failure? = nil,
        scheduler: TestScheduler,
        frame: Duration = .seconds(1)
    ) -> Signal<String, Failure> {
        let characters = (try? Marbles.parse(diagram)) ?? []
        var values: [Character: String] = [:]
        for (_, symbol) in characters {
            if case .value(let character) = symbol { values[character] = String(character) }
        }
        return marbles(diagram, values: values, failure: failure, scheduler: scheduler, frame: frame)
    }
}

/// A diagram's events grouped by tick, in order.
private struct MarbleTimeline<Output: Sendable, Failure: Error>: Sendable {
    let ticks: [(Int, [Event<Output, Failure>])]

    init(events: [(tick: Int, event: Event<Output, Failure>)]) {
        var ticks: [(Int, [Event<Output, Failure>])] = []
        for (tick, event) in events {
            if let last = ticks.last, last.0 == tick {
                ticks[ticks.count - 1].1.append(event)
            } else {
                ticks.append((tick, [event]))
            }
        }
        self.ticks = ticks
    }
}

extension SignalRecorder {
    /// What the recorder received, drawn as a marble diagram (see
    /// `Signal.marbles(_:values:failure:scheduler:frame:)` for the notation): the event at virtual
    /// time `t` is in tick `(t - origin) / frame` (rounded down); values are drawn by `symbol`
    /// (by default their description), `|` is finished and `#` failed.
    ///
    /// Needs a recorder made with a scheduler (events without a time are left out).
    public func marbles(
        frame: Duration = .seconds(1),
        from origin: Duration = .zero,
        symbol: (Output) -> String = { String(describing: $0) }
    ) -> String {
        Marbles.draw(records.compactMap { record -> (tick: Int, symbol: String)? in
            guard let time = record.time else { return nil }
            let tick = Marbles.ticks(in: time - origin, frame: frame)
            switch record.event {
            case .value(let value): return (tick, symbol(value))
            case .finished: return (tick, "|")
            case .failed: return (tick, "#")
            }
        })
    }
}
