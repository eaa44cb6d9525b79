import Synchronization
import Testing
@testable import Signals

/// A key that counts how often it is compared for equality, so a test can tell a lookup from a
/// scan without timing anything.
private struct CountingKey: Hashable, Sendable {
    static let comparisons = Atomic<Int>(0)
    let id: Int

    static func == (lhs: CountingKey, rhs: CountingKey) -> Bool {
        comparisons.add(1, ordering: .relaxed)
        return lhs.id == rhs.id
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}

/// A small deterministic random number generator, so a shuffled order is the same on every run.
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `RegistrationList` removes by key in constant time (amortised), whatever the order, so a
/// `CancellationToken` with 100 000 children (flatMap's scope) or a subject with 100 000
/// subscribers ends in linear time.
@Suite(.serialized) struct RegistrationListTests {
    private static let size = 10_000

    private func comparisons(removing order: [Int]) -> Int {
        var list = RegistrationList<CountingKey, Int>()
        for id in 0..<Self.size { list.append(id, key: CountingKey(id: id)) }
        let before = CountingKey.comparisons.load(ordering: .relaxed)
        for id in order { #expect(list.remove(key: CountingKey(id: id)) == id) }
        #expect(list.isEmpty)
        return CountingKey.comparisons.load(ordering: .relaxed) - before
    }

    @Test func removingInRegistrationOrderComparesAConstantNumberOfKeysEach() {
        #expect(comparisons(removing: Array(0..<Self.size)) <= 4 * Self.size)
    }

    @Test func removingNewestFirstComparesAConstantNumberOfKeysEach() {
        #expect(comparisons(removing: Array((0..<Self.size).reversed())) <= 4 * Self.size)
    }

    @Test func removingInAnyOrderComparesAConstantNumberOfKeysEach() {
        var generator = SplitMix(seed: 9)
        #expect(comparisons(removing: Array(0..<Self.size).shuffled(using: &generator)) <= 4 * Self.size)
    }

    @Test func keepsRegistrationOrderAcrossRemovalsAndCompaction() {
        var list = RegistrationList<Int, Int>()
        for id in 0..<1_000 { list.append(id, key: id) }
        for id in 0..<1_000 where id % 3 != 0 { _ = list.remove(key: id) }
        for id in 1_000..<1_010 { list.append(id, key: id) }
        var seen: [Int] = []
        list.forEach { seen.append($0) }
        #expect(seen == Array(stride(from: 0, to: 1_000, by: 3)) + Array(1_000..<1_010))
        #expect(list.count == seen.count)
    }

    @Test func aKeyRegisteredTwiceIsRemovedOnceAtATime() {
        var list = RegistrationList<Int, String>()
        list.append("a", key: 1)
        list.append("b", key: 2)
        list.append("c", key: 1)
        #expect(list.remove(key: 1) == "a")
        #expect(list.remove(key: 1) == "c")
        #expect(list.remove(key: 1) == nil)
        #expect(list.count == 1)
    }
}
