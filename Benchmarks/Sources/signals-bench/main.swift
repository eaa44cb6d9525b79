// signals-bench: Signals against a hand-written floor and OpenCombine, in one run, on one machine.
//
//     cd Benchmarks && swift run -c release signals-bench [--repetitions N] [--quick]
//
// Two workloads, each timed `repetitions` times (interleaved, so drift hits every contender
// alike), reporting the median:
// - per value: subject → map → filter → map → sink, 1 M values sent one by one;
// - per subscription: build and run just → map → flatMap(just) → tryMap → catch → retry(2) → sink,
//   200 k times;
// - flatMap with 25 k and 100 k live inners finishing together (linear, or not).
// Then the allocations (count and bytes asked of malloc) per subscription of that chain, counted
// by the MallocCounter target.
import Dispatch
import Foundation
import BenchFloor
import MallocCounter
import OpenCombine
import Signals
import Synchronization

// MARK: - Configuration

var repetitions = 5
var valueCount = 1_000_000
var subscriptionCount = 200_000
/// Live inner signals of the `flatMap` scaling workload (and four times as many).
var manyInners = 25_000
/// `--profile NAME`: run one workload only (for perf or callgrind), then exit.
var profiled: String?
do {
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "--repetitions":
            repetitions = arguments.popFirst().flatMap(Int.init) ?? repetitions
        case "--values":
            valueCount = arguments.popFirst().flatMap(Int.init) ?? valueCount
        case "--subscriptions":
            subscriptionCount = arguments.popFirst().flatMap(Int.init) ?? subscriptionCount
        case "--profile":
            profiled = arguments.popFirst()
        case "--inners":
            manyInners = arguments.popFirst().flatMap(Int.init) ?? manyInners
        case "--quick":
            repetitions = 3
            valueCount = 100_000
            subscriptionCount = 20_000
            manyInners = 5_000
        default:
            print("usage: signals-bench [--repetitions N] [--quick] [--values N] [--subscriptions N] [--inners N] [--profile signals-value|signals-generator|signals-subscription|signals-subscription-without-flatmap|signals-flatmap-inners|opencombine-value|opencombine-subscription|floor-value|floor-subscription]")
            exit(2)
        }
    }
}

/// Where every sink adds what it receives, so no pipeline can be optimised away. The benchmark
/// is single-threaded.
nonisolated(unsafe) var total = 0

// MARK: - Per value

/// Signals: PassthroughSubject → map → filter → map → sink.
func signalsSubjectPerValue(_ count: Int) -> Duration {
    let subject = Signals.PassthroughSubject<Int, Never>()
    let token = subject.signal
        .map { $0 &+ 1 }
        .filter { $0 & 1 == 0 }
        .map { $0 &* 3 }
        .sink { total &+= $0 }
    let elapsed = ContinuousClock().measure {
        for value in 0..<count { subject.send(value) }
    }
    token.cancel()
    return elapsed
}

/// Signals: a generator source (`Signal { observer in … }`, serialised by an Outlet) sending from
/// a loop → map → filter → map → sink.
func signalsGeneratorPerValue(_ count: Int) -> Duration {
    let signal = Signal<Int, Never> { observer in
        for value in 0..<count { observer.send(value) }
        observer.finish()
        return nil
    }
    .map { $0 &+ 1 }
    .filter { $0 & 1 == 0 }
    .map { $0 &* 3 }
    return ContinuousClock().measure {
        signal.sink { total &+= $0 }.cancel()
    }
}

/// OpenCombine: PassthroughSubject → map → filter → map → sink.
func openCombinePerValue(_ count: Int) -> Duration {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    let cancellable = subject
        .map { $0 &+ 1 }
        .filter { $0 & 1 == 0 }
        .map { $0 &* 3 }
        .sink { total &+= $0 }
    let elapsed = ContinuousClock().measure {
        for value in 0..<count { subject.send(value) }
    }
    cancellable.cancel()
    return elapsed
}

/// The floor: closures composed like a naive library would (one closure per stage), with one
/// lock per event at the source and nothing else: no terminal-event rules, no cancellation.
func floorPerValue(_ count: Int) -> Duration {
    let subject = FloorSubject(floorMap({ $0 &+ 1 }, floorFilter({ $0 & 1 == 0 }, floorMap({ $0 &* 3 }, floorSink))))
    return ContinuousClock().measure {
        for value in 0..<count { subject.send(.value(value)) }
    }
}

// MARK: - Per subscription

struct BenchError: Error {}

/// Signals: Signal(value:) → map → flatMap(Signal(value:)) → tryMap → catch → retry(2) → sink.
func signalsPerSubscription(_ count: Int) -> Duration {
    ContinuousClock().measure {
        for value in 0..<count {
            Signal<Int, Never>(value: value)
                .map { $0 &+ 1 }
                .flatMap { Signal<Int, Never>(value: $0) }
                .tryMap { value -> Int in
                    if value < 0 { throw BenchError() }
                    return value
                }
                .catch { _ in Signal<Int, Never>(value: 0) }
                .retry(2)
                .sink { total &+= $0 }
        }
    }
}

/// Signals without the flatMap stage (to see its share): Signal(value:) → map → tryMap → catch →
/// retry(2) → sink. Profile only.
func signalsPerSubscriptionWithoutFlatMap(_ count: Int) -> Duration {
    ContinuousClock().measure {
        for value in 0..<count {
            Signal<Int, Never>(value: value)
                .map { $0 &+ 1 }
                .tryMap { value -> Int in
                    if value < 0 { throw BenchError() }
                    return value
                }
                .catch { _ in Signal<Int, Never>(value: 0) }
                .retry(2)
                .sink { total &+= $0 }
        }
    }
}

/// OpenCombine: Just → map → flatMap(Just) → tryMap → catch → retry(2) → sink.
func openCombinePerSubscription(_ count: Int) -> Duration {
    ContinuousClock().measure {
        for value in 0..<count {
            _ = Just(value)
                .map { $0 &+ 1 }
                .flatMap { Just($0) }
                .tryMap { value -> Int in
                    if value < 0 { throw BenchError() }
                    return value
                }
                .catch { _ in Just(0) }
                .retry(2)
                .sink { total &+= $0 }
        }
    }
}

/// The floor: the same six stages as closures built for every subscription, each source taking
/// one lock per event.
func floorPerSubscription(_ count: Int) -> Duration {
    ContinuousClock().measure {
        for value in 0..<count {
            let chain = floorRetry(2, floorCatch({ _ in floorJust(0) }, floorTryMap({ value in
                if value < 0 { throw BenchError() }
                return value
            }, floorFlatMap({ floorJust($0) }, floorMapSignal({ $0 &+ 1 }, floorJust(value))))))
            chain(floorSink)
        }
    }
}

// MARK: - Many live inners

/// Signals: `flatMap` with `inners` live inner signals, all waiting on one subject, then all
/// finishing at once. Each finished inner leaves `flatMap`'s cancellation scope and the subject's
/// subscriber list, so the run is linear in `inners` if those removals take constant time and
/// quadratic if they scan or shift.
func signalsFlatMapManyInners(_ inners: Int) -> Duration {
    let release = Signals.PassthroughSubject<Void, Never>()
    return ContinuousClock().measure {
        let token = Signal<Int, Never>(sequence: 0..<inners)
            .flatMap { _ in release.signal.first() }
            .sink { _ in total &+= 1 }
        release.send(())
        token.cancel()
    }
}

// MARK: - Allocations

/// Allocations and bytes asked of malloc per run of `body`, over `count` runs.
func countAllocations(_ count: Int, _ body: (Int) -> Void) -> (allocations: Double, bytes: Double) {
    // Warm up caches and lazily created runtime metadata first.
    body(10)
    malloc_counter_start()
    body(count)
    malloc_counter_stop()
    return (Double(malloc_counter_allocations()) / Double(count), Double(malloc_counter_bytes()) / Double(count))
}

// MARK: - Running

func median(_ durations: [Duration]) -> Duration {
    durations.sorted()[durations.count / 2]
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

struct Contender {
    let name: String
    let perValue: (Int) -> Duration
    let perSubscription: ((Int) -> Duration)?
}

let contenders = [
    Contender(name: "Signals (PassthroughSubject)", perValue: signalsSubjectPerValue, perSubscription: signalsPerSubscription),
    Contender(name: "Signals (generator source)", perValue: signalsGeneratorPerValue, perSubscription: nil),
    Contender(name: "floor (closures + 1 lock/event)", perValue: floorPerValue, perSubscription: floorPerSubscription),
    Contender(name: "OpenCombine 0.14.0", perValue: openCombinePerValue, perSubscription: openCombinePerSubscription),
]

func cpuModel() -> String {
    guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
    for line in info.split(separator: "\n") where line.hasPrefix("model name") {
        return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
    }
    return "unknown CPU"
}

if let profiled {
    let workloads: [String: () -> Duration] = [
        "signals-value": { signalsSubjectPerValue(valueCount) },
        "signals-generator": { signalsGeneratorPerValue(valueCount) },
        "signals-subscription": { signalsPerSubscription(subscriptionCount) },
        "signals-subscription-without-flatmap": { signalsPerSubscriptionWithoutFlatMap(subscriptionCount) },
        "signals-flatmap-inners": { signalsFlatMapManyInners(manyInners) },
        "opencombine-value": { openCombinePerValue(valueCount) },
        "opencombine-subscription": { openCombinePerSubscription(subscriptionCount) },
        "floor-value": { floorPerValue(valueCount) },
        "floor-subscription": { floorPerSubscription(subscriptionCount) },
    ]
    guard let workload = workloads[profiled] else {
        print("unknown workload \(profiled); one of \(workloads.keys.sorted())")
        exit(2)
    }
    print(profiled, workload())
    exit(0)
}

print("signals-bench: \(cpuModel()), \(ProcessInfo.processInfo.activeProcessorCount) cores")
print("repetitions: \(repetitions), values: \(valueCount), subscriptions: \(subscriptionCount); medians")

// Warm-up: every contender once, small.
for contender in contenders {
    _ = contender.perValue(10_000)
    _ = contender.perSubscription?(1_000)
}

var perValue: [String: [Duration]] = [:]
var perSubscription: [String: [Duration]] = [:]
for _ in 0..<repetitions {
    for contender in contenders {
        perValue[contender.name, default: []].append(contender.perValue(valueCount))
        if let run = contender.perSubscription {
            perSubscription[contender.name, default: []].append(run(subscriptionCount))
        }
    }
}

let allocationRuns = min(subscriptionCount, 20_000)
let memory: [String: (allocations: Double, bytes: Double)] = [
    contenders[0].name: countAllocations(allocationRuns) { _ = signalsPerSubscription($0) },
    contenders[2].name: countAllocations(allocationRuns) { _ = floorPerSubscription($0) },
    contenders[3].name: countAllocations(allocationRuns) { _ = openCombinePerSubscription($0) },
]
let valueMemory: [String: (allocations: Double, bytes: Double)] = Dictionary(uniqueKeysWithValues: contenders.map { contender in
    (contender.name, countAllocations(100_000) { _ = contender.perValue($0) })
})

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func lpad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}

func format(_ value: Double, _ digits: Int = 1) -> String {
    String(format: "%.\(digits)f", value)
}

let signalsName = contenders[0].name
let signalsValue = nanoseconds(median(perValue[signalsName]!)) / Double(valueCount)
let signalsSubscription = nanoseconds(median(perSubscription[signalsName]!)) / Double(subscriptionCount)

print("")
print("| contender | ns per value | allocs per value | ns per subscription | allocs per subscription | bytes per subscription |")
print("|---|---:|---:|---:|---:|---:|")
for contender in contenders {
    let value = nanoseconds(median(perValue[contender.name]!)) / Double(valueCount)
    let valueAllocations = valueMemory[contender.name].map { format($0.allocations, 3) } ?? "-"
    let subscription = perSubscription[contender.name].map { nanoseconds(median($0)) / Double(subscriptionCount) }
    let counted = memory[contender.name]
    print("| \(contender.name) | \(format(value)) | \(valueAllocations) | \(subscription.map { format($0) } ?? "-") | \(counted.map { format($0.allocations) } ?? "-") | \(counted.map { format($0.bytes, 0) } ?? "-") |")
}

print("")
print("| ratio | per value | per subscription |")
print("|---|---:|---:|")
let floorName = contenders[2].name
let openCombineName = contenders[3].name
let floorValue = nanoseconds(median(perValue[floorName]!)) / Double(valueCount)
let floorSubscription = nanoseconds(median(perSubscription[floorName]!)) / Double(subscriptionCount)
let openCombineValue = nanoseconds(median(perValue[openCombineName]!)) / Double(valueCount)
let openCombineSubscription = nanoseconds(median(perSubscription[openCombineName]!)) / Double(subscriptionCount)
print("| OpenCombine / Signals (target ≥ 5) | \(format(openCombineValue / signalsValue, 2))x | \(format(openCombineSubscription / signalsSubscription, 2))x |")
print("| Signals / floor (target ≤ 3) | \(format(signalsValue / floorValue, 2))x | \(format(signalsSubscription / floorSubscription, 2))x |")
// flatMap with many live inners finishing together, at two sizes: the time per inner stays flat
// when finishing is linear.
let fewerInners = (0..<repetitions).map { _ in signalsFlatMapManyInners(manyInners) }
let moreInners = (0..<repetitions).map { _ in signalsFlatMapManyInners(4 * manyInners) }
let fewerMilliseconds = nanoseconds(median(fewerInners)) / 1e6
let moreMilliseconds = nanoseconds(median(moreInners)) / 1e6
print("")
print("| flatMap, live inners finishing together | \(manyInners) inners | \(4 * manyInners) inners | time ratio (linear: 4) |")
print("|---|---:|---:|---:|")
print("| Signals | \(format(fewerMilliseconds)) ms | \(format(moreMilliseconds)) ms | \(format(moreMilliseconds / fewerMilliseconds, 2))x |")
if malloc_counter_available() == 0 {
    print("(allocation counts need Linux with glibc; shown as 0 here)")
}
// Keep `total` observable so no pipeline is optimised away.
if total &+ floorTotal == 42 { print("") }
