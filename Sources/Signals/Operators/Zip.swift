extension Signal {
    /// Pairs the values of this signal and `other` in order: the first value of each, then the
    /// second of each, and so on.
    ///
    /// Guarantees:
    /// - Values that have no partner yet wait (without limit) for one.
    /// - Finishes as soon as no further pair is possible: when one signal has finished and none of
    ///   its values is left waiting. The other signal is then cancelled.
    /// - The first failure of either signal cancels the other and fails the result once.
    /// - Cancelling cancels both signals.
    /// - Pairs are delivered one at a time and in order, even when the two signals send on
    ///   different threads.
    public func zip<Other>(_ other: Signal<Other, Failure>) -> Signal<(Output, Other), Failure> {
        pairing(other, by: ZipRule<Output, Other>.self)
    }
}

/// `zip`'s rule: values wait in order for a partner; pairs are made first with first; no pair is
/// left possible once a side has finished with none of its values waiting.
struct ZipRule<Left: Sendable, Right: Sendable>: PairingRule {
    private var left = ZipBuffer<Left>()
    private var right = ZipBuffer<Right>()

    init() {}

    mutating func pair(afterLeft value: Left) -> (Left, Right)? {
        left.push(value)
        return nextPair()
    }

    mutating func pair(afterRight value: Right) -> (Left, Right)? {
        right.push(value)
        return nextPair()
    }

    func isExhausted(leftFinished: Bool, rightFinished: Bool) -> Bool {
        (leftFinished && left.isEmpty) || (rightFinished && right.isEmpty)
    }

    /// The oldest waiting value of each side, if both sides have one.
    private mutating func nextPair() -> (Left, Right)? {
        guard !left.isEmpty && !right.isEmpty else { return nil }
        return (left.pop(), right.pop())
    }
}

/// A first-in, first-out queue for values waiting for a partner.
struct ZipBuffer<Element> {
    private var items: ContiguousArray<Element> = []
    private var head = 0

    init() {}

    var isEmpty: Bool { head == items.count }

    mutating func push(_ element: Element) {
        items.append(element)
    }

    /// Removes and returns the oldest element. The buffer must not be empty.
    mutating func pop() -> Element {
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 16)
            head = 0
        } else if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension ZipBuffer: Sendable where Element: Sendable {}
