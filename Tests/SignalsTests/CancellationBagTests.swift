import Signals
import Testing
import SignalsTesting

@Suite
struct CancellationBagTests {
    @Test func bagCancelsEverythingWhenReleased() {
        let teardowns = Counter()
        var bag: CancellationBag? = CancellationBag()
        for _ in 0..<3 {
            Signal<Int, Never> { _ in { teardowns.increment() } }.sink { _ in }.store(in: bag!)
        }
        #expect(bag?.count == 3)
        bag = nil
        #expect(teardowns.count == 3)
    }

    @Test func bagCanBeEmptiedByHand() {
        let teardowns = Counter()
        let bag = CancellationBag()
        Signal<Int, Never> { _ in { teardowns.increment() } }.sink { _ in }.store(in: bag)
        bag.cancelAll()
        #expect(teardowns.count == 1)
        #expect(bag.count == 0)
    }
}
