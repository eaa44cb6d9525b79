/// A first-in, first-out queue with amortised O(1) `append` and `popFirst`: the queue of the
/// serialiser, and of the operators that hold events while they wait (``Signal/delay(for:scheduler:)``,
/// ``Signal/receive(on:)``, ``Signal/zip(_:)``, `flatMap`'s waiting values) and of the async
/// bridge.
///
/// Popped slots are cleared at once, so a queue never keeps a delivered element alive, and
/// emptying or compacting it never releases an element: only the owner's `popFirst` and
/// dropping the whole buffer (after its lock) do.
@usableFromInline
struct FIFOBuffer<Element> {
    @usableFromInline
    var storage: ContiguousArray<Element?> = []
    @usableFromInline
    var head = 0

    @inlinable
    init() {}

    /// `true` when nothing is queued.
    @inlinable
    var isEmpty: Bool { head == storage.count }

    /// The number of queued elements.
    @inlinable
    var count: Int { storage.count - head }

    /// Adds `element` at the end of the queue.
    @inlinable
    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the oldest element, or `nil` if the queue is empty.
    @inlinable
    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count {
            // Every slot is empty: nothing is released here.
            storage.removeAll(keepingCapacity: storage.count <= 64)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
