/// A first-in, first-out queue with amortised O(1) `append` and `popFirst`, used by the operators
/// that hold events while they wait (``Signal/delay(for:on:)``, ``Signal/receive(on:)``,
/// ``Signal/zip(_:)``) and by the async bridge.
///
/// Popped slots are cleared at once, so a queue never keeps a delivered element alive.
struct FIFOBuffer<Element> {
    private var storage: [Element?] = []
    private var head = 0

    init() {}

    /// `true` when nothing is queued.
    var isEmpty: Bool { head == storage.count }

    /// The number of queued elements.
    var count: Int { storage.count - head }

    /// Adds `element` at the end of the queue.
    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the oldest element, or `nil` if the queue is empty.
    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        storage[head] = nil
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Empties the queue, releasing every element.
    mutating func removeAll() {
        storage = []
        head = 0
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
